"""The binary CRUSH map (model/crush_binary.py): what Ceph stored for each bucket, which
the JSON dump does not show. The fixture (qa/maps/bucket_maps.py --tree-classes writes it
with Tentacle 20.2's tools): 36 OSDs in 6 tree hosts under a tree root, every third OSD an
ssd, a pool of 576 PGs under a class rule (take default class ssd); its dumps, its binary
map (`osdmaptool --export-crush`) and osdmaptool's PGs."""
import copy
import dataclasses
import errno
import json
import struct
from pathlib import Path
from typing import Any, Dict

import pytest

from pg_advisor.crush import compiled
from pg_advisor.crush.buckets import straws, tree_depth, tree_nodes
from pg_advisor.crush.placement import Placer
from pg_advisor.model import mappable, snapshot
from pg_advisor.model.crush_binary import MAGIC, decode_buckets
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.mappable import tree_leads_past

from pg_advisor_testkit.dumps import FIXTURES, read
from pg_advisor_testkit.osdmaptool_output import parse_dump_all
from .cli_harness import run_here
from .test_crush_buckets import BUCKETS, load as load_buckets, pg_mismatches

TREES = FIXTURES / "tree_classes"
BINARY = (TREES / "crushmap.bin").read_bytes()


def load(binary: Any = BINARY, crush: Any = None, strict: bool = True) -> snapshot.Snapshot:
    return snapshot.load(read("osd_dump.json", TREES), crush or read("crush_dump.json", TREES),
                         settings=snapshot.Settings(crush_binary=binary, strict=strict))


def mismatches(snap: snapshot.Snapshot) -> int:
    ref = parse_dump_all((TREES / "osdmaptool_dump_all_rule0.txt").read_text())
    assert len(ref) == 576
    return len(pg_mismatches(snap, 0, TREES, 576)) if snap.pools else -1


def test_every_bucket_decodes_as_the_dump_shows_it() -> None:
    stored = decode_buckets(BINARY)
    crush = read("crush_dump.json", TREES)
    assert len(stored) == len(crush["buckets"]) == 21     # 7 buckets and two shadows of each
    for b in crush["buckets"]:
        st = stored[b["id"]]
        assert st.items == tuple(i["id"] for i in b["items"])
        assert st.weights == tuple(i["weight"] for i in b["items"]), b["name"]
        assert len(st.internals) == 1 << tree_depth(len(b["items"]))


def test_the_shadow_trees_need_the_binary_map_and_are_exact_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = load(None)
    [(pool, why)] = plain.unmapped
    assert "a device-class shadow of a tree bucket" in why and "binary CRUSH map" in why
    # with what the binary map stored: every PG as osdmaptool places it
    snap = load()
    assert snap.unmapped == () and mismatches(snap) == 0
    # Tentacle left some node weights other than the item weights give: mapped from the
    # dump alone (the set-aside lifted), 301 of the 576 PGs go elsewhere
    stored = {b.id: b.stored for b in snap.buckets.values()}
    assert any(list(st) != tree_nodes(snap.buckets[bid].fixed_weights.tolist())[:len(st)]
               for bid, st in stored.items() if snap.buckets[bid].is_shadow)
    for module in (mappable, compiled):
        monkeypatch.setattr(module, "bucket_problem", lambda *a, **k: None)
    assert mismatches(load(None)) > 100


def test_a_tree_leads_past_its_last_item_only_where_its_weights_say_so() -> None:
    sound = tree_nodes([3, 5, 7])                         # 3 items, 8 nodes
    assert not tree_leads_past(sound, 3)
    bad = list(sound)
    bad[6] = 1 << 31                # node 6 (items 2 and, past the end, 3) outweighs item 2
    assert tree_leads_past(bad, 3)
    bad[4] = sound[4]
    unreached = list(sound)
    unreached[0] = 99               # node 0 is no node of the tree
    assert not tree_leads_past(unreached, 3)
    assert tree_leads_past(sound[:4], 3)                  # not the tree's node count
    assert not tree_leads_past(tree_nodes([0, 0, 0]), 3)  # weightless: never drawn


@pytest.mark.parametrize("data, words", [
    (b"", "ends at byte 0"),
    (b"{\"buckets\": []}", "no CRUSH magic"),
    (struct.pack("<IiIi", MAGIC, 1 << 20, 0, 0), "1048576 bucket slots"),
    (struct.pack("<IiIiI", MAGIC, 1, 0, 0, 9), "bucket algorithm 9"),
    (struct.pack("<IiIiIiHBBII", MAGIC, 1, 0, 0, 5, -1, 1, 5, 0, 0, 1000), "of 1000 items, past"),
    (BINARY[:len(BINARY) // 2], "inside a bucket"),
])
def test_what_is_not_a_crush_map_is_refused_in_words(data: bytes, words: str) -> None:
    with pytest.raises(AdvisorError) as e:
        decode_buckets(data)
    assert e.value.code == -errno.EINVAL and words in e.value.message, e.value.message


def test_a_binary_map_of_another_map_is_refused_offline_and_passed_over_in_the_mgr() -> None:
    crush = copy.deepcopy(read("crush_dump.json", TREES))
    host = next(b for b in crush["buckets"] if b["name"] == "host0")
    host["items"][0]["weight"] += 1
    with pytest.raises(AdvisorError) as e:
        load(crush=crush)
    assert "bucket host0 (-2) is not the dump's" in e.value.message
    snap = load(crush=copy.deepcopy(crush), strict=False)      # the mgr: the rest still read
    assert snap.buckets[-2].stored == () and snap.buckets[-1].stored != ()


def test_the_offline_cli_takes_the_binary_map(tmp_path: Path) -> None:
    argv = ["--osdmap", str(TREES / "osd_dump.json"), "--crush", str(TREES / "crush_dump.json")]
    code, out, err, *_ = run_here(argv + ["status", "-f", "json"])
    assert code == 0 and json.loads(out)["pools"][0]["not_mapped"], err
    code, out, err, *_ = run_here(argv + ["--crush-bin", str(TREES / "crushmap.bin"), "map", "-f", "json"])
    r: Dict[str, Any] = json.loads(out)
    ref = parse_dump_all((TREES / "osdmaptool_dump_all_rule0.txt").read_text())
    assert code == 0 and r["not_mapped"] == [] and r["pgs"] == {k: v[0] for k, v in ref.items()}
    code, out, err, *_ = run_here(argv + ["--crush-bin", str(TREES / "crush_dump.json"), "status"])
    assert code == 2 and "--crush-bin" not in err and "no CRUSH magic" in err, err


def test_stored_straws_win_over_the_ones_computed_from_the_dump() -> None:
    # a straw (v1) bucket keeps the straws of the straw_calc_version it was last built
    # under; the binary map's are drawn with: here the other version's, which move PGs
    snap = load_buckets(0)
    straw = next(b for b in snap.buckets.values() if b.alg == "straw" and not b.is_shadow)
    assert snap.tunables["straw_calc_version"] == 0 and BUCKETS.exists()
    other = straws(straw.fixed_weights.tolist(), 1)
    assert other != straws(straw.fixed_weights.tolist(), 0)
    stored = dataclasses.replace(snap, buckets={**snap.buckets, straw.id: dataclasses.replace(
        straw, stored=tuple(other))})
    pool = snap.pools[0]
    before, after = Placer(snap).map_pool(pool).up, Placer(stored).map_pool(pool).up
    assert (before != after).any()
