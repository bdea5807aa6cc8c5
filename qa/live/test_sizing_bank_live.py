"""The sizing bank live (issue 56): pools as real clusters have them, made on the session's
Tentacle (or Pacific) cluster, pg_advisor's status beside pg_autoscaler's own
`autoscale-status` for each; where they differ, pg_advisor's output says why. Then mode auto
on those pools (the cluster's other pools handed to pg_autoscaler's `warn` meanwhile, so
that nothing else moves): it grows, and merges nothing without pressure. The table it
prints is in doc/sizing.rst."""
import json
import subprocess
from contextlib import ExitStack
from typing import Any, Dict, Iterator, List, Optional

import pytest

from ..cluster import Cluster, wait_until

# name -> (pg_num, create options, pool sets, MB to write)
BANK: Dict[str, Any] = {
    "bk_data": (16, (), {}, 96),
    "bk_empty64": (64, (), {}, 0),
    "bk_empty128": (128, (), {}, 0),
    "bk_bulk": (8, (), {"bulk": "true"}, 2),
    "bk_ratio": (8, (), {"target_size_ratio": "0.2"}, 0),
    "bk_min": (16, (), {"pg_num_min": "16"}, 0),
    "bk_warn": (8, (), {"pg_autoscale_mode": "warn"}, 24),
    "bk_ec": (8, ("erasure", "bk21"), {}, 96),
}
# what each must be told, by the reason that says it (beside a bulk pool, which counts as
# the free space it will fill, a pool of some MB is near-empty on this small cluster)
DATA = ("share", "near_empty")
WANT = {"bk_empty64": ("merge_avoided",), "bk_empty128": ("past_band",), "bk_bulk": ("share",),
        "bk_ratio": ("share",), "bk_min": ("near_empty",), "bk_warn": ("autoscaler",),
        "bk_data": DATA, "bk_ec": DATA}


def write(c: Cluster, pool: str, mb: int) -> None:
    """About `mb` MB in 4 MiB objects."""
    for i in range(max(mb // 4, 1)):
        subprocess.run(["rados", "-p", pool, "put", f"obj{i}", "-"], input=b"x" * (4 << 20),
                       env=c.env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def bank(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    c.ceph("osd", "erasure-code-profile", "set", "bk21", "k=2", "m=1", "crush-failure-domain=host")
    with ExitStack() as stack:
        for name, (pg, create, sets, mb) in BANK.items():
            stack.enter_context(c.pool(name, pg, *create, application="rbd"))
            for k, v in sets.items():
                c.ceph("osd", "pool", "set", name, k, v)
            if mb:
                write(c, name, mb)
        stack.callback(c.run, "pg-advisor", "abort")
        c.wait_clean()
        wait_until(lambda: all(p["stats"]["stored"] > 0 for p in c.json("df")["pools"]
                               if p["name"] in BANK and BANK[p["name"]][3]), 90, "the bank's data in ceph df")
        yield c


def rows(c: Cluster) -> List[Dict[str, Any]]:
    """For each bank pool: pg_autoscaler's pick, pg_advisor's, and why they differ."""
    auto = {a["pool_name"]: a for a in c.json("osd", "pool", "autoscale-status")}
    ours = {p["name"]: p for p in c.advisor("status")["pools"]}
    out = []
    for name in BANK:
        a, p = auto.get(name), ours[name]
        out.append({"pool": name, "pg_num": p["pg_num_target"],
                    "autoscaler": a["pg_num_final"] if a else None,
                    "autoscaler_would_adjust": bool(a and a["would_adjust"]),
                    "pg_advisor": p["recommended_pg_num"], "pressing": p["pressing"],
                    "automatic": p["automatic"], "codes": [r["code"] for r in p["reasons"]],
                    "difference": p["autoscaler_difference"], "sentence": p["recommendation"]})
    return out


def table(rs: List[Dict[str, Any]]) -> str:
    lines = [f"{'pool':<12} {'pg_num':>6} {'autoscaler':>10} {'pg_advisor':>10}  why they differ"]
    for r in rs:
        lines.append(f"{r['pool']:<12} {r['pg_num']:>6} {str(r['autoscaler']):>10} "
                     f"{str(r['pg_advisor']):>10}  {r['difference'] or '-'}")
    return "\n".join(lines)


def test_the_bank_beside_pg_autoscaler(bank: Cluster) -> None:
    rs = rows(bank)
    print("\n" + table(rs))
    by = {r["pool"]: r for r in rs}
    for r in rs:
        assert set(WANT[r["pool"]]) & set(r["codes"]), r["sentence"]
        if r["autoscaler"] is not None and r["autoscaler"] != r["pg_advisor"]:
            assert r["difference"] and "pg_advisor" in r["difference"], r
    # merges only when they pay: kept within the band, suggested past it, neither pressed,
    # unless the growth of the others needs their PGs (a cap: this small cluster's 200 PGs
    # an OSD), and then they go first, being empty
    caps = {"cap_pgs", "cap_memory", "cap_peak"}
    e64, e128 = by["bk_empty64"], by["bk_empty128"]
    assert (e64["pg_advisor"] == 64 and not e64["pressing"]) or caps & set(e64["codes"]), e64
    assert (e128["pg_advisor"] == 32 and not e128["automatic"]) or caps & set(e128["codes"]), e128
    assert by["bk_min"]["pg_advisor"] == 16         # its own pg_num_min, not the module's floor 32
    assert by["bk_bulk"]["pg_advisor"] > 8


def test_one_voice_for_a_pool_pg_autoscaler_warns_on(bank: Cluster) -> None:
    st = bank.advisor("status")
    detail = json.dumps(bank.json("health", "detail")["checks"].get("PG_ADVISOR_TOO_FEW_PGS", {}))
    assert "bk_warn:" not in detail
    p = next(x for x in st["pools"] if x["name"] == "bk_warn")
    assert p["autoscaler_mode"] == "warn"


def progress(c: Cluster) -> Optional[Dict[str, Any]]:
    """`pg-advisor progress` if its plan is mode auto's."""
    r: Dict[str, Any] = c.advisor("progress")
    return r if (r.get("plan") or {}).get("source") == "auto" else None


def test_mode_auto_grows_and_merges_nothing_without_pressure(bank: Cluster) -> None:
    c = bank
    others = {p["pool_name"]: p["pg_autoscale_mode"] for p in c.json("osd", "dump")["pools"]
              if p["pool_name"] not in BANK and p["pg_autoscale_mode"] == "off"}
    with ExitStack() as undo:
        for name, mode in others.items():   # pg_autoscaler's voice for them meanwhile: auto leaves them be
            undo.callback(c.ceph, "osd", "pool", "set", name, "pg_autoscale_mode", mode)
            c.ceph("osd", "pool", "set", name, "pg_autoscale_mode", "warn")
        rs = rows(c)
        want = {r["pool"]: r["pg_advisor"] for r in rs if r["automatic"]}
        pressed = {r["pool"] for r in rs if {"cap_pgs", "cap_memory", "cap_peak"} & set(r["codes"])}
        undo.enter_context(c.options("mgr", {"sleep_interval": 2}))
        undo.callback(c.run, "pg-advisor", "abort")
        undo.callback(c.run, "pg-advisor", "mode", "advise")
        c.ceph("pg-advisor", "mode", "auto")
        wait_until(lambda: progress(c) is not None, 90, "mode auto to start a plan")
        r = progress(c)
        assert r is not None
        print("\nmode auto's plan:\n  " + "\n  ".join(x["description"] for x in r["steps"]))
        pools = {x["pool"] for x in r["steps"]}
        assert pools and pools <= set(want), (pools, want)
        # a merge only where pg_advisor pressed it (a cap: the PGs the growth needs come
        # first from the pools cheapest to merge, an empty one costing nothing)
        for x in r["steps"]:
            if x["kind"] in ("pg_num", "pgp_num") and x["pg_num"] < BANK[x["pool"]][0]:
                assert want[x["pool"]] < BANK[x["pool"]][0] and x["pool"] in pressed, (x, pressed)
