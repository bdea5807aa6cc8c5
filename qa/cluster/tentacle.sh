#!/usr/bin/env bash
# Ceph Tentacle 20.2 on this Debian 12 host: a Debian forky chroot with its Ceph packages and
# Python 3.14, run in a network namespace of its own (its 127.0.0.1:3300/6789 never meet a
# Pacific cluster on the host). As root.
#   tentacle.sh build        make the chroot (mmdebstrap, about 1.4 GB) unless built
#   tentacle.sh exec CMD...  CMD in the chroot and the namespace, the checkout mounted read-only
#                            at /pg_advisor; the chroot's /tmp is shared by every exec
#   tentacle.sh path         the chroot's directory
#   tentacle.sh inside       exit 0 when this shell already runs inside the chroot
# The chroot is $PG_ADVISOR_CHROOT (default /var/lib/pg-advisor/forky), the namespace
# $PG_ADVISOR_NETNS (default pg-advisor-tentacle; another for a second cluster).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=${PG_ADVISOR_CHROOT:-/var/lib/pg-advisor/forky}
netns=${PG_ADVISOR_NETNS:-pg-advisor-tentacle}
marker=/etc/pg-advisor-tentacle
mirror=${PG_ADVISOR_MIRROR:-http://deb.debian.org/debian}
# what a cluster, the module and its tests need there (the lint tools stay on the host)
packages=ceph-mon,ceph-osd,ceph-mgr,ceph-common,ceph-base,python3-numpy,python3-cherrypy3,python3-pytest,python3-scipy,python3-yaml,jq,iproute2,procps,chromium,fonts-liberation,prometheus,jsonnet,cmake,make

log() { echo "tentacle: $*" >&2; }

# built, and with the packages listed now (a changed list builds it anew)
built() { [ -x "$root/usr/bin/ceph-mgr" ] && grep -qxF "packages=$packages" "$root$marker" 2>/dev/null; }

do_build() {
    if [ -f "$marker" ] || built; then return 0; fi     # inside it already, or built
    mkdir -p "$(dirname "$root")"
    exec 9>"$root.lock"
    flock 9       # one build at a time: a second caller finds it built
    if built; then return 0; fi
    command -v mmdebstrap >/dev/null ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
    local t0=$SECONDS tmp="$root.new"
    rm -rf "$tmp"
    log "building a Debian forky chroot with Ceph 20.2 in $root (a few minutes)"
    # the mirror's forky Release may be past its Valid-Until by this machine's clock
    mmdebstrap --variant=apt --include="$packages" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --aptopt='APT::Install-Recommends "false"' \
        --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        --customize-hook='chroot "$1" apt-get clean' \
        forky "$tmp" "$mirror" >"$tmp.log" 2>&1 || { log "mmdebstrap failed, see $tmp.log"; tail -5 "$tmp.log" >&2; exit 1; }
    mkdir -p "$tmp/pg_advisor"
    { chroot "$tmp" ceph --version; echo "packages=$packages"; } >"$tmp$marker"
    rm -rf "$root"
    mv "$tmp" "$root"
    rm -f "$tmp.log"
    log "built in $((SECONDS - t0)) s: $(head -1 "$root$marker")"
}

ensure_netns() {
    ip netns list 2>/dev/null | grep -qw "$netns" || ip netns add "$netns"
    ip netns exec "$netns" ip link set lo up
}

do_exec() {
    [ $# -gt 0 ] || { echo "usage: $0 exec CMD..." >&2; exit 2; }
    if [ -f "$marker" ]; then exec "$@"; fi
    [ -x "$root/usr/bin/ceph-mgr" ] || do_build
    ensure_netns
    # a mount namespace of this exec's own: the binds vanish with its last process
    local cwd=/pg_advisor
    case "$PWD/" in "$repo"/*) cwd=/pg_advisor${PWD#"$repo"} ;; esac
    exec ip netns exec "$netns" unshare --mount --propagation private -- \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
        CI="${CI:-}" PG_ADVISOR_CEPH=tentacle ${PG_ADVISOR_CLUSTER_DIR:+PG_ADVISOR_CLUSTER_DIR=$PG_ADVISOR_CLUSTER_DIR} \
        ${CEPH_CONF:+CEPH_CONF=$CEPH_CONF} ${PYTEST_ADDOPTS:+PYTEST_ADDOPTS=$PYTEST_ADDOPTS} \
        bash -c '
            set -e
            root=$1 repo=$2 cwd=$3; shift 3
            mount --bind "$repo" "$root/pg_advisor"
            mount -o remount,bind,ro "$root/pg_advisor"
            mount -t proc proc "$root/proc"
            mount --rbind /dev "$root/dev"
            mount --rbind /sys "$root/sys"
            exec chroot "$root" bash -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
        ' tentacle "$root" "$repo" "$cwd" "$@"
}

action=${1:-}
[ $# -gt 0 ] && shift
case "$action" in
    build) do_build ;;
    exec) do_exec "$@" ;;
    path) echo "$root" ;;
    inside) [ -f "$marker" ] ;;
    *) echo "usage: $0 build|exec CMD...|path|inside" >&2; exit 2 ;;
esac
