#!/usr/bin/env bash
# The unit tests' fixtures from a real cluster with an EC pool, a device-class pool, data, a
# reweighted OSD and an upmap item. Usage: qa/cluster/capture_fixtures.sh [OUTDIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../../src/pg_advisor_testkit/fixtures/cluster6}
export PG_ADVISOR_CLUSTER_DIR=${PG_ADVISOR_CLUSTER_DIR:-/tmp/pg-advisor-fixtures}
env_line=$("$here/vstart.sh" start)
eval "$env_line"
trap '"$here/vstart.sh" stop' EXIT
ceph osd erasure-code-profile set ec21 k=2 m=1 crush-failure-domain=host >/dev/null
ceph osd pool create ecpool 16 16 erasure ec21 >/dev/null    # (autoscale off: vstart's default)
ceph osd pool application enable ecpool rgw >/dev/null
# a second device class and a pool whose rule takes only it (a shadow tree "default~ssd")
ceph osd crush rm-device-class osd.4 osd.5 >/dev/null
ceph osd crush set-device-class ssd osd.4 osd.5 >/dev/null
ceph osd crush rule create-replicated fast default host ssd >/dev/null
ceph osd pool create fast 8 8 replicated fast >/dev/null
ceph osd pool set fast size 2 >/dev/null
ceph osd pool set fast min_size 1 >/dev/null
ceph osd pool application enable fast rbd >/dev/null
rados bench -p rbd 5 write -t 4 -b 4096 --no-cleanup >/dev/null
rados bench -p ecpool 3 write -t 4 -b 8192 --no-cleanup >/dev/null
ceph osd reweight 5 0.8 >/dev/null
ceph osd primary-affinity 1 0.5 >/dev/null
# one replica of PG 1.0 to the other OSD of its host (vstart puts osd.i on host i % 3)
read -r from to < <(ceph pg map 1.0 -f json | jq -r '.up[0] as $o | "\($o) \(($o + 3) % 6)"')
ceph osd pg-upmap-items 1.0 "$from" "$to" >/dev/null
# settled: active+clean (remapped may stay: the 2-host ssd tree leaves some up sets short)
# for five reads in a row, as the stats lag the map
clean=0
for _ in $(seq 180); do
    ceph pg dump -f json 2>/dev/null | jq -e '.pg_map.pg_stats | length > 0 and
        all(.state | test("^active[+]clean") and (test("backfill|recover|wait|peering") | not))' \
        >/dev/null && clean=$((clean + 1)) || clean=0
    [ "$clean" -ge 5 ] && break
    sleep 1
done
[ "$clean" -ge 5 ] || { echo "capture_fixtures: PGs did not settle" >&2; exit 1; }
sleep 6
mkdir -p "$out"
ceph osd dump -f json >"$out/osd_dump.json"
ceph osd crush dump -f json >"$out/crush_dump.json"
# a set of dumps only if the PG map's version held still while they were taken
same=0
for _ in $(seq 30); do
    ceph pg dump -f json 2>/dev/null >"$out/pg_dump.json"
    ceph df -f json >"$out/df.json"
    ceph osd df -f json >"$out/osd_df.json"
    ceph osd pool autoscale-status -f json >"$out/autoscale_status.json"
    ceph pg-advisor status -f json >"$out/live_status.json"
    [ "$(jq .pg_map.version "$out/pg_dump.json")" = \
      "$(ceph pg dump -f json 2>/dev/null | jq .pg_map.version)" ] && { same=1; break; }
    sleep 1
done
[ "$same" = 1 ] || { echo "capture_fixtures: the PG stats never held still" >&2; exit 1; }
# Ceph's own mapping of every PG in this exact map, for the crush layer's tests
ceph osd getmap -o "$out/osdmap.bin" 2>/dev/null
osdmaptool "$out/osdmap.bin" --test-map-pgs-dump-all 2>/dev/null >"$out/osdmaptool_dump_all.txt"
echo "fixtures written to $out"
