"""The OSDs' settings resolved from `ceph config dump -f json` as the mon resolves them for
each OSD (model/osd_config.py): sections global < osd < osd.<id>, a matching mask over no
mask within a section, Ceph's size and count suffixes, bad values refused whole, and work
bounded by the dump."""
import copy
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from pg_advisor.model import osd_config
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.osd_config import MAX_SETTING, OSD_SETTINGS, osd_settings

Entry = Dict[str, Any]

# osd.i on host(i // 2), osds 0..3 hdd, 4..5 ssd
HOSTS: List[Optional[str]] = ["node0", "node0", "node1", "node1", "node2", "node2"]
CLASSES: List[Optional[str]] = ["hdd", "hdd", "hdd", "hdd", "ssd", "ssd"]
GIB = 1 << 30


def entry(section: str, name: str, value: str, mask: str = "") -> Entry:
    """An entry as Tentacle's `ceph config dump -f json` prints it."""
    e: Entry = {"section": section, "name": name, "value": value, "level": "basic",
                "can_update_at_runtime": True, "mask": mask}
    for part in mask.split("/") if mask else ():
        k, _, v = part.partition(":")
        if k == "class":
            e["device_class"] = v
        else:
            e["location_type"], e["location_value"] = k, v
    return e


def target(dump: Optional[List[Entry]], hosts: List[Optional[str]] = HOSTS,
           classes: List[Optional[str]] = CLASSES) -> List[int]:
    return osd_settings(dump, hosts, classes, OSD_SETTINGS)["osd_memory_target"].tolist()


def test_the_defaults_are_cephs() -> None:
    assert dict(OSD_SETTINGS) == {
        "osd_memory_target": 4294967296, "osd_memory_base": 805306368,
        "osd_memory_cache_min": 134217728, "osd_min_pg_log_entries": 250,
        "osd_max_pg_log_entries": 10000, "osd_target_pg_log_entries_per_osd": 300000,
        "osd_pg_log_dups_tracked": 3000, "osd_max_backfills": 1}


@pytest.mark.parametrize("dump", [None, []])
def test_without_a_dump_every_osd_has_the_fallback(dump: Optional[List[Entry]]) -> None:
    got = osd_settings(dump, HOSTS, CLASSES, OSD_SETTINGS)
    assert set(got) == set(OSD_SETTINGS)
    for name, v in got.items():
        assert v.dtype == np.int64 and v.tolist() == [OSD_SETTINGS[name]] * 6
        assert not v.flags.writeable
    # the caller's own value (the CLI's flag) stands in; a name it lacks (or None) is Ceph's
    fallback: Dict[str, Any] = {"osd_memory_target": 3 * GIB, "osd_memory_base": None}
    mine = osd_settings(dump, HOSTS, CLASSES, fallback)
    assert mine["osd_memory_target"].tolist() == [3 * GIB] * 6
    assert mine["osd_memory_base"].tolist() == [OSD_SETTINGS["osd_memory_base"]] * 6
    assert osd_settings(None, [], [], OSD_SETTINGS)["osd_memory_target"].shape == (0,)


def test_global_then_osd_then_osd_id() -> None:
    dump = [entry("global", "osd_memory_target", "1G")]
    assert target(dump) == [GIB] * 6
    dump.append(entry("osd", "osd_memory_target", "2G"))
    assert target(dump) == [2 * GIB] * 6
    dump.append(entry("osd.3", "osd_memory_target", "3G"))
    assert target(dump) == [2 * GIB] * 3 + [3 * GIB] + [2 * GIB] * 2
    # the order of the dump does not matter across sections
    assert target(dump[::-1]) == target(dump)
    # an id beyond the OSDs, and names Ceph never gives an OSD, reach none
    dump += [entry("osd.6", "osd_memory_target", "5G"), entry("osd.03", "osd_memory_target", "5G"),
             entry("osd.", "osd_memory_target", "5G"), entry("osds", "osd_memory_target", "5G")]
    assert target(dump) == [2 * GIB] * 3 + [3 * GIB] + [2 * GIB] * 2


def test_each_setting_resolves_on_its_own() -> None:
    dump = [entry("osd", "osd_max_pg_log_entries", "2000"),
            entry("osd.1", "osd_min_pg_log_entries", "100"),
            entry("global", "osd_pg_log_dups_tracked", "1K")]
    got = osd_settings(dump, HOSTS, CLASSES, OSD_SETTINGS)
    assert got["osd_max_pg_log_entries"].tolist() == [2000] * 6
    assert got["osd_min_pg_log_entries"].tolist() == [250, 100, 250, 250, 250, 250]
    assert got["osd_pg_log_dups_tracked"].tolist() == [1000] * 6     # a count: K is 1000
    assert got["osd_memory_target"].tolist() == [OSD_SETTINGS["osd_memory_target"]] * 6


def test_a_host_mask_beats_no_mask_within_a_section_not_a_later_section() -> None:
    dump = [entry("osd", "osd_memory_target", "6G", "host:node1"),
            entry("osd", "osd_memory_target", "2G")]
    want = [2 * GIB] * 2 + [6 * GIB] * 2 + [2 * GIB] * 2
    assert target(dump) == want and target(dump[::-1]) == want
    # a masked entry in osd beats an unmasked global one too (osd is the later section)
    assert target([entry("osd", "osd_memory_target", "6G", "host:node1"),
                   entry("global", "osd_memory_target", "1G")]) == [GIB] * 2 + [6 * GIB] * 2 + [GIB] * 2
    # but osd.N unmasked beats osd's host mask: masks rank within a section only
    dump.append(entry("osd.2", "osd_memory_target", "1G"))
    assert target(dump) == [2 * GIB] * 2 + [GIB, 6 * GIB] + [2 * GIB] * 2
    # and a global host mask loses to an unmasked osd entry
    assert target([entry("global", "osd_memory_target", "6G", "host:node1"),
                   entry("osd", "osd_memory_target", "2G")]) == [2 * GIB] * 6


def test_a_mask_that_does_not_match_is_passed_over() -> None:
    dump = [entry("osd", "osd_memory_target", "6G", "host:elsewhere"),
            entry("osd", "osd_memory_target", "6G", "class:nvme"),
            entry("osd.0", "osd_memory_target", "6G", "host:node2")]
    assert target(dump) == [OSD_SETTINGS["osd_memory_target"]] * 6
    # an OSD CRUSH places on no host, or without a class, matches no mask
    hosts, classes = list(HOSTS), list(CLASSES)
    hosts[0] = classes[0] = None
    dump = [entry("osd", "osd_memory_target", "6G", "host:node0"),
            entry("osd", "osd_memory_target", "6G", "class:hdd"),
            entry("osd", "osd_memory_target", "6G", "host:")]
    assert target(dump, hosts, classes)[:2] == [OSD_SETTINGS["osd_memory_target"], 6 * GIB]


def test_class_masks_and_their_precision() -> None:
    dump = [entry("osd", "osd_memory_target", "8G", "class:ssd"),
            entry("osd", "osd_memory_target", "2G")]
    assert target(dump) == [2 * GIB] * 4 + [8 * GIB] * 2
    # a location mask is more precise than a class mask (Ceph's get_precision)
    dump.append(entry("osd", "osd_memory_target", "5G", "host:node2"))
    assert target(dump) == [2 * GIB] * 4 + [5 * GIB] * 2
    assert target(dump[::-1]) == [2 * GIB] * 4 + [5 * GIB] * 2
    # both: only where both match, at the location's precision (two entries equally precise
    # that both match: the later one, as the mon's multimap keeps them in order)
    both = [entry("osd", "osd_memory_target", "7G", "host:node2/class:ssd"),
            entry("osd", "osd_memory_target", "9G", "host:node1/class:ssd")]
    assert target(dump + both) == [2 * GIB] * 4 + [7 * GIB] * 2
    assert target(dump[:2] + both[::-1] + dump[2:]) == [2 * GIB] * 4 + [5 * GIB] * 2
    # a class mask in global, an osd.N's own class mask
    assert target([entry("global", "osd_memory_target", "3G", "class:hdd"),
                   entry("osd.4", "osd_memory_target", "1G", "class:ssd"),
                   entry("osd.5", "osd_memory_target", "1G", "class:hdd")]) == \
        [3 * GIB] * 4 + [GIB, OSD_SETTINGS["osd_memory_target"]]


def test_older_dumps_and_other_crush_types() -> None:
    # a dump with only the mask string, or only location_type/location_value, or no mask
    masked = [{"section": "osd", "name": "osd_memory_target", "value": "6G", "mask": "host:node1"},
              {"section": "osd", "name": "osd_memory_target", "value": "6G",
               "location_type": "host", "location_value": "node1"}]
    for e in masked:
        assert target([e, {"section": "osd", "name": "osd_memory_target", "value": "2G"}]) == \
            [2 * GIB] * 2 + [6 * GIB] * 2 + [2 * GIB] * 2
    # a rack mask matches through the ancestors given, finer types ranking first
    rack = ["r1"] * 4 + ["r2"] * 2
    dump = [entry("osd", "osd_memory_target", "3G", "rack:r1"),
            entry("osd", "osd_memory_target", "5G", "host:node1")]
    got = osd_settings(dump, HOSTS, CLASSES, OSD_SETTINGS, ancestors={"rack": rack})
    assert got["osd_memory_target"].tolist() == [3 * GIB] * 2 + [5 * GIB] * 2 + [4 * GIB] * 2
    # without them, a rack mask matches no OSD (its location is not known)
    assert target(dump) == [4 * GIB] * 2 + [5 * GIB] * 2 + [4 * GIB] * 2


# (size: Ceph's strict_iec_cast, for the TYPE_SIZE options; count: strict_si_cast, for the
# TYPE_UINT ones, None where Ceph refuses the text as a count)
@pytest.mark.parametrize("text, size, count", [
    ("3221225472", 3221225472, 3221225472), ("4G", 4 * GIB, 4 * 10 ** 9), ("4Gi", 4 * GIB, None),
    ("4GiB", 4 * GIB, None), ("4GB", 4 * GIB, None), ("512M", 512 << 20, 512 * 10 ** 6),
    ("1T", 1 << 40, 10 ** 12), ("64K", 64 << 10, 64000), ("7B", 7, None), ("+5", 5, 5),
    ("10K", 10240, 10000), ("2Mi", 2 << 20, None), ("1P", 1 << 50, 10 ** 15), ("0", 0, 0)])
def test_suffixes_as_ceph_reads_them(text: str, size: int, count: Optional[int]) -> None:
    dump = [entry("osd", "osd_memory_target", text), entry("osd", "osd_memory_base", text)]
    got = osd_settings(dump, HOSTS, CLASSES, OSD_SETTINGS)
    assert got["osd_memory_target"].tolist() == [size] * 6
    assert got["osd_memory_base"].tolist() == [size] * 6
    counts = [entry("osd", "osd_max_pg_log_entries", text)]
    if count is None:
        with pytest.raises(AdvisorError, match="is not a count"):
            osd_settings(counts, HOSTS, CLASSES, OSD_SETTINGS)
    else:
        got = osd_settings(counts, HOSTS, CLASSES, OSD_SETTINGS)
        assert got["osd_max_pg_log_entries"].tolist() == [count] * 6


def test_cephadms_autotune_layout() -> None:
    # `ceph orch` autotune: one osd/host:HOST osd_memory_target per host, beside
    # osd_memory_target_autotune and other options
    dump = [entry("global", "container_image", "quay.io/ceph/ceph@sha256:abc"),
            entry("osd", "osd_memory_target_autotune", "true"),
            entry("osd", "osd_memory_target", "5368709120", "host:node0"),
            entry("osd", "osd_memory_target", "7516192768", "host:node1"),
            entry("osd", "osd_memory_target", "3221225472", "host:node2"),
            entry("mgr", "mgr/cephadm/autotune_memory_target_ratio", "0.7")]
    assert target(dump) == [5 << 30] * 2 + [7 << 30] * 2 + [3 << 30] * 2


@pytest.mark.parametrize("name, value", [
    ("osd_memory_target", "4X"), ("osd_memory_target", "4.5G"), ("osd_memory_target", "-1"),
    ("osd_memory_target", "-4G"), ("osd_memory_target", "4 G"), ("osd_memory_target", ""),
    ("osd_memory_target", "4g"), ("osd_memory_target", "4Bi"), ("osd_memory_target", "4KKB"),
    ("osd_memory_target", "2E"), ("osd_memory_target", str(MAX_SETTING + 1)),
    ("osd_memory_target", "1" * 400), ("osd_memory_target", "١٢"),
    ("osd_max_pg_log_entries", "10Ki"), ("osd_max_pg_log_entries", "100B"),
    ("osd_max_pg_log_entries", "-5"), ("osd_pg_log_dups_tracked", "1E"),
    ("osd_min_pg_log_entries", "abc"), ("osd_memory_base", None), ("osd_memory_base", 1.5)])
def test_a_bad_value_is_refused_and_changes_nothing(name: str, value: Any) -> None:
    dump = [entry("osd", "osd_memory_target", "2G"), entry("osd.1", name, value)]
    before = copy.deepcopy(dump)
    fallback = dict(OSD_SETTINGS)
    with pytest.raises(AdvisorError) as e:
        osd_settings(dump, HOSTS, CLASSES, fallback)
    assert e.value.code == -22
    assert "section osd.1" in e.value.message and f"option {name}" in e.value.message
    if isinstance(value, str) and value and len(value) < 20:
        assert f"'{value}'" in e.value.message
    assert dump == before and fallback == OSD_SETTINGS


def test_a_bad_value_in_an_osd_section_is_refused_even_when_overridden_or_unmatched() -> None:
    for e in (entry("global", "osd_memory_target", "lots"),
              entry("osd", "osd_memory_target", "lots", "host:nowhere"),
              entry("osd.99", "osd_memory_target", "lots")):
        with pytest.raises(AdvisorError):
            osd_settings([e, entry("osd.0", "osd_memory_target", "2G")], HOSTS, CLASSES, OSD_SETTINGS)


def test_other_sections_and_options_are_not_read() -> None:
    dump = [entry("mon", "osd_memory_target", "garbage"), entry("mgr", "osd_memory_target", "1G"),
            entry("client.admin", "osd_memory_target", "1G"), entry("client", "osd_memory_base", "x"),
            entry("mds.a", "osd_pg_log_dups_tracked", "1"),
            entry("osd", "bluestore_cache_size", "not a number"),
            entry("osd", "osd_memory_target_autotune", "true"),
            {"section": "osd", "name": "debug_osd", "value": ["any", "thing"], "mask": 7}]
    assert target(dump) == [OSD_SETTINGS["osd_memory_target"]] * 6


@pytest.mark.parametrize("dump", [{"osd_memory_target": "4G"}, "osd_memory_target", [["osd"]],
                                  [entry("osd", "osd_memory_target", "2G"), None],
                                  [{"section": "osd", "value": "2G"}]])
def test_a_dump_that_is_not_a_config_dump_is_refused(dump: Any) -> None:
    with pytest.raises(AdvisorError) as e:
        osd_settings(dump, HOSTS, CLASSES, OSD_SETTINGS)
    assert e.value.code == -22 and "config dump" in e.value.message


@pytest.mark.parametrize("e", [
    {"name": "osd_memory_target", "value": "2G"},
    {"section": 3, "name": "osd_memory_target", "value": "2G"},
    {"section": "osd", "name": "osd_memory_target", "value": "2G", "mask": "node1"},
    {"section": "osd", "name": "osd_memory_target", "value": "2G", "mask": ["host:node1"]},
    {"section": "osd", "name": "osd_memory_target", "value": "2G", "location_type": 1}])
def test_a_malformed_entry_of_a_setting_is_refused(e: Entry) -> None:
    with pytest.raises(AdvisorError) as err:
        osd_settings([e], HOSTS, CLASSES, OSD_SETTINGS)
    assert err.value.code == -22 and "osd_memory_target" in err.value.message


def test_a_large_dump_reads_each_entry_once_and_each_osd_a_bounded_number_of_times(
        monkeypatch: pytest.MonkeyPatch) -> None:
    n_osds, per_host = 10_000, 10
    hosts: List[Optional[str]] = [f"node{i // per_host}" for i in range(n_osds)]
    classes: List[Optional[str]] = ["ssd" if i % 4 == 0 else "hdd" for i in range(n_osds)]
    dump = [entry("osd", "osd_memory_target", str((4 + h % 3) << 30), f"host:node{h}")
            for h in range(n_osds // per_host)]                                # 1,000
    dump += [entry(f"osd.{i}", "osd_max_pg_log_entries", str(1000 + i)) for i in range(n_osds)]
    dump += [entry(f"client.c{i}", "rbd_cache", "true") for i in range(8_000)]
    dump += [entry("osd", "osd_memory_target", "2G", "class:ssd"), entry("osd", "osd_memory_target", "3G"),
             entry("global", "osd_memory_target", "1G")]
    dump += [entry("osd", "osd_memory_target", "3G")] * 997      # repeats of one key
    assert len(dump) == 20_000
    relevant = sum(e["name"] in OSD_SETTINGS for e in dump)

    reads: List[str] = []
    applied: List[Tuple[str, int]] = []
    read_entry, apply = osd_config._entry, osd_config._apply

    def counting_read(e: Entry, name: str, count: int) -> Any:
        reads.append(name)
        return read_entry(e, name, count)

    def counting_apply(osds: Any, key: Any, value: int, vectors: Any) -> int:
        seen = apply(osds, key, value, vectors)
        applied.append((key.name, seen))
        return seen

    monkeypatch.setattr(osd_config, "_entry", counting_read)
    monkeypatch.setattr(osd_config, "_apply", counting_apply)
    got = osd_settings(dump, hosts, classes, OSD_SETTINGS)

    # each entry of a setting is read once, no other entry is read at all
    assert len(reads) == relevant == 12_000
    # repeats of one key apply once; each applied entry touches only the OSDs it reaches:
    # the host masks together touch each OSD once, each osd.N one OSD
    assert len(applied) == 1_000 + n_osds + 3
    assert sum(seen for _, seen in applied) == n_osds + n_osds + n_osds // 4 + n_osds + n_osds
    mem = got["osd_memory_target"]
    assert mem[0] == 4 << 30 and mem[10] == 5 << 30 and mem[25] == 6 << 30
    assert got["osd_max_pg_log_entries"].tolist() == [1000 + i for i in range(n_osds)]


def test_the_inputs_must_agree() -> None:
    with pytest.raises(ValueError):
        osd_settings(None, HOSTS, CLASSES[:-1], OSD_SETTINGS)
    with pytest.raises(ValueError):
        osd_settings(None, HOSTS, CLASSES, OSD_SETTINGS, ancestors={"rack": ["r1"]})
    with pytest.raises(AdvisorError):
        osd_settings(None, HOSTS, CLASSES, {"osd_memory_target": -1})
