#!/usr/bin/env bash
# The demo: install what is needed, start a loopback Ceph cluster (1 mon, 1 mgr, 6 OSDs on
# 3 hosts) with pg_advisor loaded in its mgr, put some data in, and print the module's status.
# The cluster keeps running; `qa/vstart.sh stop` ends it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
env_line=$(bash "$here/vstart.sh" start "$@")
eval "$env_line"
rados -p rbd bench 3 write -t 4 -b 4096 --no-cleanup >/dev/null
sleep 6  # one PG stats period, so the status shows the data
echo
echo "\$ ceph pg-advisor status"
ceph pg-advisor status
echo
echo "The cluster is still running. Use it with:"
echo "  $env_line"
echo "  ceph pg-advisor status -f json-pretty"
echo "Stop it with: bash $here/vstart.sh stop"
