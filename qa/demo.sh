#!/usr/bin/env bash
# The demo: install what is needed, start a loopback Ceph cluster (1 mon, 1 mgr, 6 OSDs on
# 3 hosts) with pg_advisor loaded in its mgr, put some data in, and print the module's status.
# Ceph Tentacle 20.2 by default (in the chroot of qa/cluster/tentacle.sh); `--ceph pacific` for the
# host's Ceph 16.2. Other arguments go to `qa/cluster/vstart.sh start`.
# The cluster keeps running; `qa/cluster/vstart.sh stop [--ceph pacific]` ends it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
release=${PG_ADVISOR_CEPH:-tentacle}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[i]}" = --ceph ] && release=${args[i + 1]:-}
done
if [ "$release" = tentacle ] && ! bash "$here/cluster/tentacle.sh" inside; then
    bash "$here/cluster/install-deps.sh" --tentacle     # the host's packages and the chroot
    exec bash "$here/cluster/tentacle.sh" exec bash /pg_advisor/qa/demo.sh "$@"
fi
env_line=$(bash "$here/cluster/vstart.sh" start "$@")
eval "$env_line"
rados -p rbd bench 3 write -t 4 -b 4096 --no-cleanup >/dev/null
sleep 6  # one PG stats period, so the status shows the data
printf '\n%s\n\n$ ceph pg-advisor status\n' "$(ceph --version)"
ceph pg-advisor status
printf '\n$ ceph health\n'
ceph health
echo
echo "The cluster is still running. Use it with:"
if [ "$release" = tentacle ]; then
    echo "  $env_line; bash qa/cluster/tentacle.sh exec ceph pg-advisor status -f json-pretty"
    echo "    (or a shell there: bash qa/cluster/tentacle.sh exec bash)"
    echo "Stop it with: bash qa/cluster/vstart.sh stop"
else
    printf '  %s\n  ceph pg-advisor status -f json-pretty\n' "$env_line"
    echo "Stop it with: bash qa/cluster/vstart.sh stop --ceph pacific"
fi
