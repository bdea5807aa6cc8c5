#!/usr/bin/env bash
# Every test pg_advisor has: installs what it needs (apt), runs the unit tests, flake8 and
# mypy through tox, then the integration tests against a real Ceph cluster that
# qa/vstart.sh starts on loopback with the module loaded in the real ceph-mgr.
# Extra arguments go to the integration pytest run (e.g. -k status).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash qa/install-deps.sh
echo "== unit tests, flake8, mypy (tox)"
/usr/bin/tox
echo "== integration tests on a real cluster"
export PYTHONDONTWRITEBYTECODE=1
/usr/bin/python3 -m pytest -p no:cacheprovider -v --durations=15 qa "$@"
# after the session's cluster is gone (the thrasher starts its own, on the same ports): a
# 3-minute thrash of mode auto, every invariant checked (the full runs: doc/testing.rst)
echo "== 3-minute thrash of mode auto (qa/thrash.py)"
/usr/bin/python3 -m qa.thrash --minutes 3 --seed 1 --pg-nums 32,128,32 --set step_interval=2 \
    --dir "${TMPDIR:-/tmp}/pg-advisor-thrash-smoke"
