#!/usr/bin/env bash
# What the cluster, demo and tests need, from Debian's packages (no apt when all are there).
# As root. With --tentacle, also the forky chroot with Ceph 20.2 (tentacle.sh build).
set -euo pipefail
packages=(ceph-mon ceph-osd ceph-mgr ceph-common ceph-base
          python3-numpy python3-cherrypy3 python3-pytest python3-scipy jq iproute2
          tox python3-flake8 python3-mypy cmake chromium fonts-liberation
          prometheus python3-yaml jsonnet mmdebstrap podman runc)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "${1:-}" != --tentacle ] || bash "$(dirname "${BASH_SOURCE[0]}")/tentacle.sh" build
