#!/usr/bin/env bash
# A loopback Ceph cluster (1 mon, 1 mgr, N OSDs on H CRUSH hosts) with pg_advisor loaded
# from this checkout:
#   qa/cluster/vstart.sh start [--ceph tentacle|pacific] [--osds N] [--hosts H] [--dir DIR]
#       [--store memstore|bluestore] [--block-gib G] [--no-pool] [--recovery-defaults]
#   qa/cluster/vstart.sh add-osds --count N --host NAME [--dir DIR]  (N more OSDs on host NAME)
#   qa/cluster/vstart.sh stop|status [--dir DIR]
# --ceph (default $PG_ADVISOR_CEPH, else tentacle): tentacle is Ceph 20.2, this script run
# again in qa/cluster/tentacle.sh's chroot (DIR is the chroot's); pacific is the host's 16.2.
# --block-gib: bluestore's sparse block files (default 2); --recovery-defaults: Ceph's own
# recovery scheduler and sleeps, which the tests replace with wpq and no sleep, for speed.
# Everything lives below DIR (default $PG_ADVISOR_CLUSTER_DIR or /tmp/pg-advisor-cluster);
# `stop` ends exactly the daemons of DIR's pid files.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

action=${1:-}
[ $# -gt 0 ] && shift
all_args=("$@")
ceph_release=${PG_ADVISOR_CEPH:-tentacle} dir=${PG_ADVISOR_CLUSTER_DIR:-/tmp/pg-advisor-cluster}
osds=6 hosts=3 store=memstore make_pool=1 pool=rbd count=0 new_host= block_gib=2 recovery_defaults=0
die() { echo "vstart.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --osds|--hosts|--store|--dir|--count) printf -v "${1#--}" %s "$2"; shift 2 ;;
        --ceph) ceph_release=$2; shift 2 ;;
        --no-pool) make_pool=0; shift ;;
        --block-gib) block_gib=$2; shift 2 ;;
        --recovery-defaults) recovery_defaults=1; shift ;;
        --host) new_host=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
case "$ceph_release" in tentacle|pacific) ;; *) die "--ceph must be tentacle or pacific" ;; esac
case "$store" in memstore|bluestore) ;; *) die "--store must be memstore or bluestore" ;; esac
for v in osds hosts; do [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--$v must be a positive integer"; done
[[ "$block_gib" =~ ^[1-9][0-9]{0,3}$ ]] || die "--block-gib must be 1..9999"
[ "$hosts" -le "$osds" ] || die "--hosts ($hosts) exceeds --osds ($osds)"

# absolute, so the CEPH_CONF the daemons carry (how `alive` knows them) is one string
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac

if [ "$ceph_release" = tentacle ] && ! bash "$here/tentacle.sh" inside; then
    [ "$action" = start ] && bash "$here/install-deps.sh" --tentacle
    exec bash "$here/tentacle.sh" exec env PG_ADVISOR_CLUSTER_DIR="$dir" \
        bash /pg_advisor/qa/cluster/vstart.sh "$action" "${all_args[@]}"
fi
conf=$dir/ceph.conf
export CEPH_CONF=$conf

log() { echo "vstart: $*" >&2; }

pidfiles() { ls "$dir"/run/*.pid 2>/dev/null || true; }

# a pid file's pid is DIR's daemon only while it names a process (not a thread, not a zombie)
# with this CEPH_CONF: pids wrap over a long test run, and stop would kill another process
alive() {
    [[ "${1:-}" =~ ^[0-9]+$ ]] || return 1
    [ "$(awk '$1 == "Tgid:" {print $2}' "/proc/$1/status" 2>/dev/null)" = "$1" ] || return 1
    grep -qzxF "CEPH_CONF=$conf" "/proc/$1/environ" 2>/dev/null
}

live_pids() {
    local f pid
    for f in $(pidfiles); do
        pid=$(cat "$f" 2>/dev/null || true)
        if alive "$pid"; then echo "$pid"; fi
    done
}

do_stop() {   # 10 s to exit cleanly, then forced
    local pids
    pids=$(live_pids)
    [ -z "$pids" ] || kill $pids 2>/dev/null || true
    for _ in $(seq 100); do
        pids=$(live_pids)
        [ -n "$pids" ] || break
        sleep 0.1
    done
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    rm -f $(pidfiles)
}

do_status() {
    local f pid n=0 up=0
    for f in $(pidfiles); do
        n=$((n + 1)) pid=$(cat "$f" 2>/dev/null || true)
        if alive "$pid"; then up=$((up + 1)); echo "$(basename "$f" .pid) running pid $pid"
        else echo "$(basename "$f" .pid) not running"; fi
    done
    [ $n -gt 0 ] || { echo "no cluster in $dir"; return 1; }
    echo "CEPH_CONF=$conf"
    [ $up -gt 0 ] && timeout 10 ceph -s 2>/dev/null || true
    [ $up = $n ]
}

write_conf() {
    # replicas one per host, at most 3 (with fewer hosts the default pools stay whole)
    local pool_size=$((hosts < 3 ? hosts : 3)) t
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
crash dir = $dir/crash
osd pool default size = $pool_size
osd pool default min size = $((pool_size > 2 ? 2 : 1))
osd pool default pg autoscale mode = off
mon allow pool delete = true
mon data avail warn = 1
mon data avail crit = 0
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
mon warn on pool no redundancy = false
mgr initial modules = iostat
mgr module path = $dir/mgr-modules
EOF
    for t in mon mgr osd; do
        printf '\n[%s]\n' "$t"
        printf '%s = %s\n' "admin socket" "$dir/run/\$name.asok" "pid file" "$dir/run/\$name.pid" \
            "log file" "$dir/log/\$name.log" "$t data" "$dir/$t.\$id"
        # the cluster log and the audit log (every command and its sender) beside the others
        [ "$t" != mon ] || echo "mon cluster log file = default=$dir/log/ceph.\$channel.log cluster=$dir/log/ceph.log"
    done >>"$conf"
    # Debian forky's Ceph 20.2 defaults osd class dir to a relative path: no object class loads
    cat >>"$conf" <<EOF
osd class dir = $(dirname "$(ls /usr/lib/*/rados-classes/libcls_lock.so /usr/lib/rados-classes/libcls_lock.so 2>/dev/null | head -1)")
osd objectstore = $store
memstore device bytes = 1073741824
bluestore block create = true
bluestore block size = $((block_gib << 30))
osd op num shards = 2
osd op num threads per shard = 1
EOF
    # memstore says rotational: a removed pool's PGs would be deleted at hdd pace, holding their
    # logs (the PG memory check); Tentacle's mclock backfilled 2 objects in 20 s there, and its
    # degraded recovery sleeps 0.1 s an object: wpq with no sleep, as on Pacific
    if [ "$recovery_defaults" = 0 ]; then
        printf '%s\n' "osd recovery sleep hdd = 0" "osd delete sleep hdd = 0" "osd op queue = wpq" >>"$conf"
        [ "$ceph_release" != tentacle ] || echo "osd recovery sleep degraded hdd = 0" >>"$conf"
    fi
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then log "timed out waiting for $what"; return 1; fi
        sleep 0.5
    done
}

healthy() {
    local s
    s=$(ceph status -f json 2>/dev/null) || return 1
    [ "$(jq -r .health.status <<<"$s")" = HEALTH_OK ] || return 1
    jq -e '.pgmap.num_pgs > 0 and ([.pgmap.pgs_by_state[] | select(.state_name == "active+clean") | .count] | add) == .pgmap.num_pgs' <<<"$s" >/dev/null || [ "$make_pool" = 0 ]
}

# new_osds COUNT [HOST]: COUNT new OSDs on HOST (default: host(i % hosts), from osd.0 on),
# each placing itself at its crush location when it starts; their ids in `ids`
new_osds() {
    local i id uuid p pids=()
    ids=()
    for ((i = 0; i < $1; i++)); do
        uuid=$(cat /proc/sys/kernel/random/uuid)
        id=$(ceph osd new "$uuid")
        [ -n "${2:-}" ] || [ "$id" = "$i" ] || { log "expected osd id $i, got $id"; exit 1; }
        ids+=("$id")
        printf '\n[osd.%d]\ncrush location = root=default host=%s\n' "$id" "${2:-host$((i % hosts))}" >>"$conf"
        { mkdir -p "$dir/osd.$id" &&
            ceph-osd -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/osd.$id.mkfs" 2>&1 &&
            ceph-osd -i "$id" 2>>"$dir/log/osd.$id.start"; } &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { log "an OSD failed to start (see $dir/log)"; exit 1; }; done
}

do_start() {
    bash "$here/tentacle.sh" inside || bash "$here/install-deps.sh"    # the chroot has its own
    do_stop
    if ss -ltnH 2>/dev/null | awk '{print $4}' | grep -qE '^127\.0\.0\.1:(3300|6789)$'; then
        log "the mon ports 3300/6789 are taken: another cluster runs (stop it with its own --dir)"
        exit 1
    fi
    rm -rf "$dir"
    mkdir -p "$dir"/{run,log,crash,mgr-modules,mon.a,mgr.x}
    local t0=$SECONDS m h
    fsid=$(cat /proc/sys/kernel/random/uuid)
    write_conf
    # mgr module path takes one directory: Ceph's modules, ours, the tests' own (qa/cluster/mgr)
    for m in /usr/share/ceph/mgr/* "$repo"/qa/cluster/mgr/*/; do ln -s "${m%/}" "$dir/mgr-modules/"; done
    ln -s "$repo/src/pg_advisor" "$dir/mgr-modules/pg_advisor"

    monmaptool --create --fsid "$fsid" --addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' \
        "$dir/monmap" >/dev/null
    ceph-mon --mkfs -i a --monmap "$dir/monmap" >/dev/null
    ceph-mon -i a
    wait_for 30 "the mon" ceph mon stat
    # settings the mgr must see on its first start
    ceph config set mgr mgr/balancer/active false --force >/dev/null
    ceph config set mgr mgr/devicehealth/enable_monitoring false --force >/dev/null
    ceph mgr module enable pg_advisor --force >/dev/null
    ceph-mgr -i x
    for ((h = 0; h < hosts; h++)); do
        ceph osd crush add-bucket "host$h" host root=default >/dev/null 2>&1
    done
    new_osds "$osds"
    wait_for 60 "all OSDs up" bash -c "ceph osd stat -f json | jq -e '.num_up_osds == $osds and .num_in_osds == $osds'"
    if [ "$make_pool" = 1 ]; then    # (size, min_size, autoscale off: the conf's defaults)
        ceph osd pool create "$pool" 32 32 replicated >/dev/null 2>&1
        ceph osd pool application enable "$pool" rbd >/dev/null 2>&1
    fi
    wait_for 60 "the pg_advisor module" bash -c "ceph mgr services && ceph pg-advisor status"
    wait_for 90 "HEALTH_OK with all PGs active+clean" healthy
    log "cluster healthy in $((SECONDS - t0)) s ($osds OSDs on $hosts hosts, $store)"
    echo "export CEPH_CONF=$conf"
}

do_add_osds() {
    [[ "$count" =~ ^[1-9][0-9]*$ ]] || die "--count must be a positive integer"
    [[ "$new_host" =~ ^[A-Za-z0-9_-]+$ ]] || die "--host NAME (letters, digits, - and _)"
    [ -f "$conf" ] || { log "no cluster in $dir"; exit 1; }
    ceph osd crush add-bucket "$new_host" host root=default >/dev/null 2>&1 || true
    local id
    new_osds "$count" "$new_host"
    for id in "${ids[@]}"; do
        wait_for 60 "osd.$id up" bash -c "ceph osd dump -f json | jq -e '.osds[] | select(.osd == $id) | .up == 1 and .in == 1'"
    done
    log "added ${ids[*]} on host $new_host"
    echo "${ids[*]}"
}

case "$action" in
    start) do_start ;;
    add-osds) do_add_osds ;;
    stop) do_stop; log "stopped" ;;
    status) do_status ;;
    *) echo "usage: $0 start|add-osds|stop|status [options] (see --help)" >&2; exit 2 ;;
esac
