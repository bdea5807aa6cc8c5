#!/usr/bin/env bash
# Every test pg_advisor has, on both Ceph releases it supports. Installs what it needs (apt,
# and the Debian forky chroot with Ceph Tentacle 20.2 that qa/tentacle.sh builds), then:
#   1. unit tests, flake8, mypy, promtool (tox) on the host's Python 3.11 (Pacific's mgr),
#      and beside them a compatibility subset on a real Pacific 16.2 cluster from the
#      host's packages: the module loads, status, balance, a plan applied across a mgr
#      failover;
#   2. the unit tests again on the chroot's Python 3.14 (Tentacle's mgr);
#   3. every integration test on a real Tentacle cluster (qa/vstart.sh in the chroot, the
#      module loaded in its ceph-mgr);
#   4. a 3-minute thrash of mode auto on Tentacle.
# A deprecation warning fails a test on either Python (tox.ini's [pytest]).
# Extra arguments go to the Tentacle integration run (e.g. -k status).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1
t0=$SECONDS
took() { echo "== ($1 took $((SECONDS - t1)) s; $((SECONDS - t0)) s in all)"; }
pacific_log=${TMPDIR:-/tmp}/pg-advisor-pacific-subset.log

t1=$SECONDS
bash qa/install-deps.sh --tentacle
took "installing"

# the host's tox (CPU) beside the Pacific subset (mostly waiting on its cluster): the two
# share nothing, and the run is some 5 minutes shorter for it
echo "== compatibility subset on Ceph Pacific 16.2 (the host), in the background; its log: $pacific_log"
t1=$SECONDS
PG_ADVISOR_CEPH=pacific /usr/bin/python3 -m pytest -v --durations=10 \
    qa/test_status_live.py qa/test_balance_live.py \
    "qa/test_execute_live.py::test_doubling_with_a_client_writing_survives_a_mgr_failover" \
    >"$pacific_log" 2>&1 &
pacific=$!
echo "== unit tests, flake8, mypy, promtool (tox, Python $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])'))"
tox_rc=0
/usr/bin/tox || tox_rc=$?
took "tox"
pacific_rc=0
wait "$pacific" || pacific_rc=$?
echo "== the Pacific subset's log"
cat "$pacific_log"
took "tox and the Pacific subset"
[ "$tox_rc" = 0 ] && [ "$pacific_rc" = 0 ] || { echo "tox: $tox_rc, Pacific subset: $pacific_rc"; exit 1; }

echo "== unit tests on Tentacle's Python (the chroot)"
t1=$SECONDS
bash qa/tentacle.sh exec env PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -q src/pg_advisor/tests
took "unit tests on Tentacle's Python"

echo "== integration tests on Ceph Tentacle 20.2 (the chroot)"
t1=$SECONDS
bash qa/tentacle.sh exec env PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -v --durations=15 qa "$@"
took "Tentacle integration tests"

# after the session's cluster is gone (the thrasher starts its own, on the same ports): a
# 3-minute thrash of mode auto, every invariant checked (the full runs: doc/testing.rst)
echo "== 3-minute thrash of mode auto on Tentacle (qa/thrash.py)"
t1=$SECONDS
bash qa/tentacle.sh exec python3 -m qa.thrash --minutes 3 --seed 1 --pg-nums 32,128,32 \
    --set step_interval=2 --dir /tmp/pg-advisor-thrash-smoke
took "thrash"
