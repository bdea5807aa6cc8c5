#!/usr/bin/env bash
# Every test on both Ceph releases (what .ci/run runs): installs what it needs (apt, and
# qa/cluster/tentacle.sh's chroot), then two stages, each one's parts side by side (they mostly
# wait on their clusters), each part's log printed whole when it ends:
#   1. tox (unit tests, flake8, mypy, promtool) on the host's Python 3.11 (Pacific's mgr), the
#      unit tests on the chroot's 3.14 (Tentacle's), a subset on a Pacific 16.2 cluster (and the
#      CRUSH maps of qa/maps/test_crush_exact.py and Ceph's test suite against Pacific's tools), the
#      container image's test (podman on the host, a Tentacle cluster in netns pg-advisor-ctr);
#   2. every integration test on Tentacle clusters, and a 3-minute thrash of mode auto.
# Extra arguments go to the Tentacle integration run (e.g. -k status).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1
t0=$SECONDS
took() { echo "== ($1 took $((SECONDS - t1)) s; $((SECONDS - t0)) s in all)"; }
declare -A pid rc
logof() { echo "${TMPDIR:-/tmp}/pg-advisor-$1.log"; }
spawn() {  # spawn NAME WHAT CMD...: CMD in the background, its output in NAME's log
    echo "== $2, in the background; its log: $(logof "$1")"
    local name=$1; shift 2
    "$@" >"$(logof "$name")" 2>&1 &
    pid[$name]=$!
}
collect() {  # collect NAME...: wait for each, then print its log whole
    local n
    for n in "$@"; do
        rc[$n]=0
        wait "${pid[$n]}" || rc[$n]=$?
        echo "== $n: its log"
        cat "$(logof "$n")"
    done
}
# exit 1 unless every NAME passed, after a failed run's FAILURES again (a long log's middle
# may be cut where only its head and tail are kept) and every exit code
verdict() {
    local n failed=0 codes=""
    for n in "$@"; do
        codes+="$n: ${rc[$n]}; "
        [ "${rc[$n]}" = 0 ] && continue
        failed=1
        [ -f "$(logof "$n")" ] || continue
        echo "== $n failed; its failures again (from $(logof "$n")):"
        sed -n '/^=\+ \(FAILURES\|ERRORS\) =\+$/,$p' "$(logof "$n")" | tail -n 150
    done
    [ $failed = 0 ] || { echo "${codes%; }"; exit 1; }
}

t1=$SECONDS
bash qa/cluster/install-deps.sh --tentacle
took "installing"

# the four share nothing (the container test's cluster has a netns and directory of its own)
t1=$SECONDS
spawn pacific-subset "compatibility subset on Ceph Pacific 16.2 (the host)" \
    env PG_ADVISOR_CEPH=pacific PG_ADVISOR_SPLIT_REPEATS=1 /usr/bin/python3 -m pytest -v --durations=10 \
    qa/live/test_status_live.py qa/live/test_balance_live.py qa/live/test_read_balance_live.py \
    "qa/live/test_execute_live.py::test_doubling_with_a_client_writing_survives_a_mgr_failover" \
    "qa/live/test_execute_live.py::test_a_split_of_one_pg_is_done_only_once_its_two_pgs_are_clean_on_two_osds" \
    qa/live/test_side_by_side_live.py qa/live/test_crush_binary_live.py qa/container/test_deploy_specs.py \
    qa/maps/test_ceph_suite_maps.py \
    qa/maps/test_crush_exact.py --deselect qa/maps/test_crush_exact.py::test_live_map_every_pool
spawn container "the container image on Tentacle (podman, the host)" \
    /usr/bin/python3 -m pytest -v --durations=5 qa/container/test_image_host.py
spawn unit-tentacle "unit tests on Tentacle's Python (the chroot)" \
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -q src/pg_advisor/tests
echo "== unit tests, flake8, mypy, promtool (tox, Python $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])'))"
rc[tox]=0
/usr/bin/tox || rc[tox]=$?
took "tox"
collect unit-tentacle pacific-subset container
took "tox, the chroot's unit tests, the Pacific subset and the container test"
verdict tox unit-tentacle pacific-subset container

# Stage 2, three Tentacle clusters side by side, each in a network namespace of its own: the
# integration tests in two sessions (one after another they took 50 minutes; the second runs
# SECOND, the first all other files) and a 3-minute thrash (doc/testing.rst).
SECOND=(qa/live/test_latency_live.py qa/live/test_sizing_live.py qa/live/test_monitoring_live.py
        qa/live/test_gates_live.py qa/live/test_panel_browser.py qa/live/test_panel_live.py
        qa/live/test_panel_scale.py qa/live/test_hardening_live.py qa/live/test_sizing_bank_live.py
        qa/live/test_whatif_live.py qa/live/test_reweight_live.py qa/live/test_primaries_live.py
        qa/live/test_read_balance_live.py)
ignore=()
for f in "${SECOND[@]}"; do ignore+=("--ignore=$f"); done
t1=$SECONDS
spawn thrash-smoke "3-minute thrash of mode auto on Tentacle (python3 -m qa.thrash)" \
    env PG_ADVISOR_NETNS=pg-advisor-thrash bash qa/cluster/tentacle.sh exec python3 -m qa.thrash \
    --minutes 3 --seed 1 --pg-nums 32,128,32 --set step_interval=2 --dir /tmp/pg-advisor-thrash-smoke
# (with arguments such as -k, a session none of whose tests they select passes: pytest's 5)
second() {
    local r=0
    PG_ADVISOR_NETNS=pg-advisor-live2 bash qa/cluster/tentacle.sh exec env PYTHONDONTWRITEBYTECODE=1 \
        python3 -m pytest -v --durations=15 "${SECOND[@]}" "$@" || r=$?
    [ $r = 5 ] && [ $# -gt 0 ] && r=0
    return $r
}
spawn live-tentacle-2 "integration tests on Tentacle, second session (${#SECOND[@]} files)" second "$@"
echo "== integration tests on Ceph Tentacle 20.2 (the chroot), first session; a copy of their log: $(logof live-tentacle)"
rc[live-tentacle]=0
bash qa/cluster/tentacle.sh exec env PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -v --durations=15 qa "${ignore[@]}" "$@" 2>&1 | tee "$(logof live-tentacle)" || rc[live-tentacle]=$?
took "Tentacle integration tests, first session"
collect live-tentacle-2 thrash-smoke
took "Tentacle integration tests and the thrash"
verdict live-tentacle live-tentacle-2 thrash-smoke
