#!/usr/bin/env bash
# Install what pg_advisor's cluster, demo and tests need, from Debian's packages only
# (Ceph Pacific, the mgr's Python libraries, the test and lint tools, scipy for the
# balance tests' bound on moves, Chromium for the panel's browser tests, Prometheus and
# its promtool for the alert rules and their tests, python3-yaml, jsonnet for the
# dashboard, podman and runc for the container image's test). Skips apt when everything
# is already there. Must run as root (or via sudo).
# With --tentacle, also the Debian forky chroot with Ceph 20.2 (qa/cluster/tentacle.sh build).
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
if [ "${1:-}" = --tentacle ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/tentacle.sh" build
fi
