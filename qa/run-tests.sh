#!/usr/bin/env bash
# Every test pg_advisor has, on both Ceph releases it supports. Installs what it needs (apt,
# and the Debian forky chroot with Ceph Tentacle 20.2 that qa/cluster/tentacle.sh builds), then:
#   1. at once: unit tests, flake8, mypy, promtool (tox) on the host's Python 3.11
#      (Pacific's mgr); the unit tests on the chroot's Python 3.14 (Tentacle's mgr); a
#      compatibility subset on a real Pacific 16.2 cluster from the host's packages: the
#      module loads, status, balance, a plan applied across a mgr failover, the cephadm
#      spec through Pacific's own parser; and the
#      container image (podman, on the host): container/Containerfile built on the chroot
#      imported as Ceph's image, its ceph-mgr run against a Tentacle cluster of its own
#      (network namespace pg-advisor-ctr), the module's state kept across disable/enable
#      and new images;
#   2. at once: every integration test on a real Tentacle cluster (qa/cluster/vstart.sh in the
#      chroot, the module loaded in its ceph-mgr), and a 3-minute thrash of mode auto on
#      another Tentacle cluster in a network namespace of its own.
# The parts run side by side because they mostly wait on their clusters (2 cores: some
# 20 minutes shorter in all); each one's log is printed whole when it ends.
# A deprecation warning fails a test on either Python (tox.ini's [pytest]).
# Extra arguments go to the Tentacle integration run (e.g. -k status).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1
t0=$SECONDS
took() { echo "== ($1 took $((SECONDS - t1)) s; $((SECONDS - t0)) s in all)"; }
pacific_log=${TMPDIR:-/tmp}/pg-advisor-pacific-subset.log
unit_log=${TMPDIR:-/tmp}/pg-advisor-unit-tentacle.log
thrash_log=${TMPDIR:-/tmp}/pg-advisor-thrash-smoke.log
container_log=${TMPDIR:-/tmp}/pg-advisor-container.log
live_log=${TMPDIR:-/tmp}/pg-advisor-live-tentacle.log
# a failed run's reasons, printed again at its end: a long log's middle may be cut where
# only its head and tail are kept (pytest's FAILURES section up to its summary, bounded)
failures() {
    local name=$1 log=$2
    echo "== $name failed; its failures again (from $log):"
    sed -n '/^=\+ \(FAILURES\|ERRORS\) =\+$/,$p' "$log" | tail -n 150
}

t1=$SECONDS
bash qa/cluster/install-deps.sh --tentacle
took "installing"

# the host's tox and the chroot's unit tests (CPU, one core each) beside the Pacific subset
# and the container test (mostly waiting on their clusters): the four share nothing (the
# container test's cluster is in a network namespace and a directory of its own)
echo "== compatibility subset on Ceph Pacific 16.2 (the host), in the background; its log: $pacific_log"
t1=$SECONDS
PG_ADVISOR_CEPH=pacific /usr/bin/python3 -m pytest -v --durations=10 \
    qa/live/test_status_live.py qa/live/test_balance_live.py qa/live/test_read_balance_live.py \
    "qa/live/test_execute_live.py::test_doubling_with_a_client_writing_survives_a_mgr_failover" \
    qa/container/test_deploy_specs.py >"$pacific_log" 2>&1 &
pacific=$!
echo "== the container image on Tentacle (podman, the host), in the background; its log: $container_log"
/usr/bin/python3 -m pytest -v --durations=5 qa/container/test_image_host.py >"$container_log" 2>&1 &
container=$!
echo "== unit tests on Tentacle's Python (the chroot), in the background; its log: $unit_log"
bash qa/cluster/tentacle.sh exec env PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -q src/pg_advisor/tests >"$unit_log" 2>&1 &
unit=$!
echo "== unit tests, flake8, mypy, promtool (tox, Python $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])'))"
tox_rc=0
/usr/bin/tox || tox_rc=$?
took "tox"
unit_rc=0
wait "$unit" || unit_rc=$?
echo "== the unit tests on Tentacle's Python: their log"
cat "$unit_log"
pacific_rc=0
wait "$pacific" || pacific_rc=$?
echo "== the Pacific subset's log"
cat "$pacific_log"
container_rc=0
wait "$container" || container_rc=$?
echo "== the container test's log"
cat "$container_log"
took "tox, the chroot's unit tests, the Pacific subset and the container test"
[ "$tox_rc" = 0 ] && [ "$unit_rc" = 0 ] && [ "$pacific_rc" = 0 ] && [ "$container_rc" = 0 ] ||
    { [ "$unit_rc" = 0 ] || failures "the unit tests on Tentacle's Python" "$unit_log"
      [ "$pacific_rc" = 0 ] || failures "the Pacific subset" "$pacific_log"
      [ "$container_rc" = 0 ] || failures "the container test" "$container_log"
      echo "tox: $tox_rc, unit tests on Tentacle's Python: $unit_rc, Pacific subset: $pacific_rc," \
        "container test: $container_rc"; exit 1; }

# the thrasher starts a cluster of its own: in a network namespace of its own, beside the
# integration tests' (the same ports, another loopback); a 3-minute thrash of mode auto,
# every invariant checked (the full runs: doc/testing.rst)
echo "== 3-minute thrash of mode auto on Tentacle (python3 -m qa.thrash), in the background; its log: $thrash_log"
t1=$SECONDS
PG_ADVISOR_NETNS=pg-advisor-thrash bash qa/cluster/tentacle.sh exec python3 -m qa.thrash --minutes 3 --seed 1 \
    --pg-nums 32,128,32 --set step_interval=2 --dir /tmp/pg-advisor-thrash-smoke >"$thrash_log" 2>&1 &
thrash=$!
echo "== integration tests on Ceph Tentacle 20.2 (the chroot); a copy of their log: $live_log"
live_rc=0
bash qa/cluster/tentacle.sh exec env PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -v --durations=15 qa "$@" 2>&1 | tee "$live_log" || live_rc=$?
took "Tentacle integration tests"
thrash_rc=0
wait "$thrash" || thrash_rc=$?
echo "== the thrash's log"
cat "$thrash_log"
took "Tentacle integration tests and the thrash"
[ "$live_rc" = 0 ] && [ "$thrash_rc" = 0 ] ||
    { [ "$live_rc" = 0 ] || failures "the Tentacle integration tests" "$live_log"
      echo "integration tests: $live_rc, thrash: $thrash_rc"; exit 1; }
