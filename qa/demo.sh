#!/usr/bin/env bash
# The demo: a loopback cluster (qa/cluster/vstart.sh start, whose arguments it takes: Tentacle
# 20.2 in qa/cluster/tentacle.sh's chroot, or --ceph pacific) with pg_advisor loaded and some
# data, and the module's status. The cluster keeps running.
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
