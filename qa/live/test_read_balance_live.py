"""Read balance with pg-upmap-primary on the live mon, beside Ceph's own read balancer.

Tentacle: a pool whose primaries are made uneven by hand (every PG that has osd.0 past its
first slot gets osd.0 as its primary), then, from that same start, three read balancers:
`osdmaptool --read` on the mon's map, `ceph pg-advisor read-balance`, and Ceph's balancer
in mode read. Each pool's read_balance score after pg_advisor's must be at least as low as
after either of Ceph's, and within as many commands as Ceph used it must reach a score at
least as low. pg_advisor's entries are the mon's: every PG's primary in the mon's map is
the one planned, the pool's score in `ceph osd pool ls detail` is the predicted one, and
Ceph's read balancer finds nothing left to do. Pacific has no pg-upmap-primary: the
dry run shows the scores, a round is refused, nothing is sent.
"""
import math
import re
import subprocess
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot

from ..cluster import Cluster, wait_until

POOL = "rdbal"
PG_NUM = 64
SCORE = re.compile(r"read_balance_score of '[^']*': ([0-9.]+)")


def pool_row(c: Cluster) -> Dict[str, Any]:
    return c.pool_detail(POOL)


def uneven(c: Cluster) -> int:
    """Every PG of the pool with osd.0 past its first slot gets osd.0 as its primary."""
    n = c.hand_primaries(POOL, 0)
    c.wait_clean()            # a new primary peers its PG
    return n


def osdmaptool_read(c: Cluster, name: str) -> Tuple[List[str], float, float]:
    """`osdmaptool --read` on the mon's map now: its commands, the pool's score before and
    after them (the same when it finds nothing to do; NaN when it prints none, as on a
    pool it finds perfect)."""
    path, out = c.dir / f"{name}.bin", c.dir / f"{name}.cmds"
    c.ceph("osd", "getmap", "-o", str(path))
    p = subprocess.run(["osdmaptool", str(path), "--read", str(out), "--read-pool", POOL],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    scores = [float(x) for x in SCORE.findall(p.stdout)]
    cmds = [ln for ln in out.read_text().splitlines() if "pg-upmap-primary" in ln] if out.exists() else []
    if not scores:
        return cmds, math.nan, math.nan
    return cmds, scores[0], scores[-1]


def ours(c: Cluster, *args: str) -> Dict[str, Any]:
    r = c.advisor("read-balance", POOL, *args)
    row = next(p for p in r["pools"] if p["pool"] == POOL)
    return dict(r, row=row)


def reset(c: Cluster) -> None:
    c.rm_primaries()
    c.wait_clean()


@pytest.fixture(scope="module")
def reads(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    if c.release() == "pacific":
        pytest.skip("pg-upmap-primary came with Reef; this cluster runs Pacific")
    # (what only newer clients read goes before the older ones are let in again)
    with c.min_compat_client("reef"), c.pool(POOL, PG_NUM, application="rados"):
        try:
            c.wait_clean()
            yield c
        finally:
            c.ceph("balancer", "mode", "upmap")
            c.rm_primaries()


def test_read_balance_beside_osdmaptool_and_cephs_balancer(reads: Cluster) -> None:
    c = reads
    handed = uneven(c)
    before = pool_row(c)["read_balance"]["score_acting"]
    # 1. osdmaptool --read and pg_advisor's dry run, on the same map
    tool_cmds, tool_before, tool_after = osdmaptool_read(c, "start")
    assert tool_cmds and tool_after < tool_before, (tool_before, tool_after)
    plan = ours(c, "--dry-run", "--max-changes", "10000")
    row = plan["row"]
    assert abs(row["score_before"] - tool_before) < 0.005 and abs(before - tool_before) < 0.005, \
        (row["score_before"], tool_before, before)
    assert row["score_after"] <= tool_after
    within = ours(c, "--dry-run", "--max-changes", str(len(tool_cmds)))
    assert len(within["commands"]) <= len(tool_cmds) and within["row"]["score_after"] <= tool_after
    # 2. pg_advisor's round, set for real: what the mon keeps is what was planned
    done = ours(c, "--max-changes", "10000")
    assert done["failed"] == [] and done["applied"] == len(done["commands"]) == len(plan["commands"]), done
    # what the mon kept, checked by the background on the next map (the history)
    wanted = len(done["commands"])

    def check() -> List[str]:
        return [h["detail"] for h in c.advisor("history")["history"]
                if h["event"] == "checked" and h["detail"].startswith("read-balance")]
    wait_until(lambda: bool(check()), 120, "the read-balance round's check in the history")
    assert check()[-1].endswith(f"{wanted} of {wanted} primary entries as set"), check()
    c.wait_clean()
    assert abs(pool_row(c)["read_balance"]["score_acting"] - row["score_after"]) < 0.005
    osd_dump, crush = c.json("osd", "dump"), c.json("osd", "crush", "dump")
    snap = snapshot.load(osd_dump, crush)
    pool = snap.pool_by_name(POOL)
    m = Placer.of(snap).map_pool(pool)
    mon = c.mappings(int(osd_dump["epoch"]), pool.id)
    wrong = [m.pgid(i) for i in range(PG_NUM) if mon[m.pgid(i)][1] != int(m.up_primary[i])]
    assert not wrong, f"{len(wrong)} PGs' primaries differ from the mon's, e.g. {wrong[:5]}"
    # Ceph's read balancer finds nothing more to do on pg_advisor's result
    again, _, _ = osdmaptool_read(c, "after")
    assert again == [], again
    # 3. Ceph's balancer, mode read, from the same start
    reset(c)
    assert uneven(c) == handed
    c.ceph("balancer", "mode", "read")
    code, _, err = c.run("balancer", "optimize", "rd", POOL)
    assert code == 0, err
    shown = [ln for ln in c.ceph("balancer", "show", "rd").splitlines() if "pg-upmap-primary" in ln]
    c.ceph("balancer", "execute", "rd")
    c.wait_clean()
    balancer_after = pool_row(c)["read_balance"]["score_acting"]
    assert row["score_after"] <= balancer_after
    print(f"pool {POOL} ({PG_NUM} PGs, {handed} primaries handed to osd.0): score {tool_before:.2f}; "
          f"osdmaptool --read: {len(tool_cmds)} commands -> {tool_after:.2f}; Ceph's balancer (mode "
          f"read): {len(shown)} commands -> {balancer_after:.2f}; pg_advisor: {len(plan['commands'])} "
          f"commands -> {row['score_after']:.2f} (at most {row['max_after']} primaries an OSD, floor "
          f"{row['floor']}), within {len(tool_cmds)}: {len(within['commands'])} -> "
          f"{within['row']['score_after']:.2f}")


def test_pacific_shows_the_scores_and_refuses_a_round(cluster: Cluster) -> None:
    c = cluster
    if c.release() != "pacific":
        pytest.skip("the refusal is Pacific's (no pg-upmap-primary)")
    with c.pool(POOL, 16):
        c.wait_clean()
        r = c.advisor("read-balance", "--dry-run")
        assert r["allowed"] is False and r["commands"] == [] and r["pools"]
        epoch = c.json("osd", "dump")["epoch"]
        code, _, err = c.run("pg-advisor", "read-balance")
        assert code == 95 and "require_min_compat_client reef" in err, (code, err)
        assert c.json("osd", "dump")["epoch"] == epoch        # nothing was set


def test_an_unknown_pool_is_refused(cluster: Cluster) -> None:
    code, _, err = cluster.run("pg-advisor", "read-balance", "nope", "--dry-run")
    assert code == 2 and "pool 'nope' does not exist" in err, (code, err)
