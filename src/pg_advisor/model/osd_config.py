"""The OSDs' own settings, resolved per OSD from the mon's config database.

Read from `ceph config dump -f json` (a list of entries: section, name, value, mask) the
way the mon resolves them for one OSD (ConfigMap::generate_entity_map in Ceph's
src/mon/ConfigMap.cc): section `global`, then `osd`, then `osd.<id>`, a later section
overriding an earlier one; within a section, the most precise entry that matches the OSD
wins (a CRUSH location mask, finest type first, over a device class mask, over no mask;
the later of two equally precise ones). A masked entry that does not match is passed over,
and no other section (mon, mgr, client.x) reaches an OSD.

The work is bounded by the dump, not by the dump times the OSDs: each entry is read once,
entries that say the same thing collapse to the last one (as the mon keeps one key), and
each applies to the OSD ids its mask names at once (index vectors grouped once per host
and class), so a section's host masks together touch each OSD once.
"""
import re
from collections import abc
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .checks import as_int, show
from .cluster import CONFIG_DEFAULTS, frozen
from .errors import AdvisorError


# The settings read per OSD, with Ceph's defaults (Pacific 16.2 and Tentacle 20.2 agree;
# CONFIG_DEFAULTS holds them for every layer)
OSD_SETTINGS: Mapping[str, int] = {k: CONFIG_DEFAULTS[k] for k in (
    "osd_memory_target", "osd_memory_base", "osd_memory_cache_min", "osd_min_pg_log_entries",
    "osd_max_pg_log_entries", "osd_target_pg_log_entries_per_osd", "osd_pg_log_dups_tracked",
    "osd_max_backfills")}
# Ceph's TYPE_SIZE options (read with strict_iec_cast: K, Ki, KB, KiB are 2^10); the
# others are TYPE_UINT (strict_si_cast: a final K, M, ... is a power of 1000)
SIZE_SETTINGS = frozenset({"osd_memory_target", "osd_memory_base", "osd_memory_cache_min"})
MAX_SETTING = 1 << 50

_IEC_SHIFT = {"B": 0, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}
_SI_POWER = {"K": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DIGITS = re.compile(r"[+-]?[0-9]{1,20}\Z")      # what strtoll takes whole (ASCII digits)
_NUMBER_HEAD = re.compile(r"[0-9+-]*")
_SECTIONS = {"global": 0, "osd": 1}              # osd.<id> is 2
_CLASS = "class"      # the mask key of a device class (Ceph's parse_mask reserves it)


class _Key(NamedTuple):
    """What an entry applies to: two entries with one key are one setting, the later kept."""
    name: str
    section: int          # 0 global, 1 osd, 2 osd.<id>
    osd: int              # the id of an osd.<id> section, else -1
    location_type: str    # "" when unmasked by location
    location_value: str
    device_class: str     # "" when unmasked by class


def _size(text: str) -> Optional[int]:
    """Ceph's strict_iec_cast for a size option ("4G", "4Gi", "4GiB", "512M", "4096"), or
    None when it would refuse the text."""
    head = _NUMBER_HEAD.match(text)
    number = head.group() if head else ""
    unit = text[len(number):]
    if len(unit) > 1 and unit.endswith("B"):
        unit = unit[:-1]
    shift = 0
    if unit:
        if len(unit) > 2 or (len(unit) == 2 and unit[1] != "i") or unit == "Bi":
            return None
        if unit[0] not in _IEC_SHIFT:
            return None
        shift = _IEC_SHIFT[unit[0]]
    return int(number) << shift if _DIGITS.match(number) else None


def _count(text: str) -> Optional[int]:
    """Ceph's strict_si_cast for an unsigned option ("250", "10K" = 10000), or None."""
    power = 0
    if text[-1:] in _SI_POWER:
        text, power = text[:-1], _SI_POWER[text[-1]]
    return int(text) * 10 ** power if _DIGITS.match(text) else None


def _value(entry: Mapping[str, Any], name: str, section: str) -> int:
    where = f"config dump: section {show(section)}, option {name}"
    raw = entry.get("value")
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str):
        raise AdvisorError.invalid(f"{where}: the value is not a string")
    size = name in SIZE_SETTINGS
    v = _size(raw) if size else _count(raw)
    if v is None:
        what = ("a size (bytes, or with K, M, G, T, P or E for powers of 1024: 4G, 4Gi, 512M)"
                if size else "a count (digits, or with K, M, G, T, P or E for powers of 1000)")
        raise AdvisorError.invalid(f"{where}: value '{show(raw)}' is not {what}")
    if not 0 <= v <= MAX_SETTING:
        raise AdvisorError.invalid(f"{where}: value '{show(raw)}' is {show(v)}; it must be "
                                   f"within 0..{MAX_SETTING}")
    return v


def _section(section: str) -> Optional[Tuple[int, int]]:
    """(rank, OSD id or -1) of a section that reaches OSDs; None for any other (mon, mgr,
    client.x, and an osd.<id> that is not how Ceph names an OSD, as osd.007)."""
    if section in _SECTIONS:
        return _SECTIONS[section], -1
    ident = section[4:] if section.startswith("osd.") else ""
    if 0 < len(ident) <= 10 and ident.isascii() and ident.isdigit() and str(int(ident)) == ident:
        return 2, int(ident)
    return None


def _text(entry: Mapping[str, Any], field: str, where: str) -> str:
    v = entry.get(field)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise AdvisorError.invalid(f"{where}: field '{field}' is not a string")
    return v


def _mask(entry: Mapping[str, Any], where: str) -> Tuple[str, str, str]:
    """(location type, location value, device class), "" where unmasked: from the fields
    Ceph dumps beside the mask (location_type, location_value, device_class) and from the
    mask itself ("host:node1", "class:ssd", "rack:r1/class:ssd"), as older releases may
    give either alone."""
    loc_type, loc_value = _text(entry, "location_type", where), _text(entry, "location_value", where)
    device_class = _text(entry, "device_class", where)
    mask = _text(entry, "mask", where)
    for part in mask.split("/") if mask else ():
        key, colon, value = part.partition(":")
        if not colon or not key:
            raise AdvisorError.invalid(f"{where}: mask '{show(mask)}' is not of the form "
                                       "TYPE:NAME or class:CLASS")
        if key == _CLASS:
            device_class = device_class or value
        elif not loc_type:
            loc_type, loc_value = key, value
    return loc_type, loc_value, device_class


def _read(dump: Sequence[Mapping[str, Any]], count: int) -> Dict[_Key, int]:
    """The entries of OSD_SETTINGS that reach some OSD below `count`, each value checked
    (an entry of another section is not read); of entries with one key the last is kept,
    in the order of its last appearance."""
    if not isinstance(dump, (list, tuple)) or any(
            type(e) is not dict and not isinstance(e, abc.Mapping) for e in dump):
        raise AdvisorError.invalid("config dump: not the output of `ceph config dump -f json` "
                                   "(a list of objects)")
    out: Dict[_Key, int] = {}
    for entry in dump:
        name = entry.get("name")
        if not isinstance(name, str):
            raise AdvisorError.invalid("config dump: an entry without a name (not the output of "
                                       "`ceph config dump -f json`)")
        if name not in OSD_SETTINGS:
            continue
        got = _entry(entry, name, count)
        if got is not None:
            key, value = got
            out.pop(key, None)     # a later equal entry wins, and ranks as later
            out[key] = value
    return out


def _entry(entry: Mapping[str, Any], name: str, count: int) -> Optional[Tuple[_Key, int]]:
    """One entry of OSD_SETTINGS read and checked; None when its section reaches no OSD."""
    section = entry.get("section")
    if not isinstance(section, str):
        raise AdvisorError.invalid(f"config dump: option {name} has no section")
    placed = _section(section)
    if placed is None:
        return None
    where = f"config dump: section {show(section)}, option {name}"
    loc_type, loc_value, device_class = _mask(entry, where)
    value = _value(entry, name, section)
    rank, osd = placed
    if osd >= count:
        return None
    return _Key(name, rank, osd, loc_type, loc_value, device_class), value


class _Osds:
    """The OSDs' CRUSH locations and device classes, each grouped once (name -> the OSD
    ids, ascending) when a mask first asks for it."""

    def __init__(self, locations: Mapping[str, Sequence[Optional[str]]],
                 classes: Sequence[Optional[str]], count: int) -> None:
        self.count = count
        self.columns: Dict[str, Sequence[Optional[str]]] = {**locations, _CLASS: classes}
        # precision (lower is more precise, as Ceph's get_precision): the location types in
        # CRUSH type order, then the device class, then no mask
        self.precision = {t: i for i, t in enumerate(locations)}
        self.precision[_CLASS] = len(locations)
        self.levels = len(locations) + 2
        self.groups: Dict[str, Dict[str, np.ndarray]] = {}
        self.all = np.arange(count, dtype=np.int64)

    def members(self, column: str, value: str) -> np.ndarray:
        groups = self.groups.get(column)
        if groups is None:
            names = np.array(["" if v is None else str(v) for v in self.columns[column]], dtype=object)
            keys, inverse = np.unique(names.astype(str), return_inverse=True)
            order = np.argsort(inverse, kind="stable")
            bounds = np.cumsum(np.bincount(inverse, minlength=keys.size))[:-1]
            groups = dict(zip(keys.tolist(), np.split(order.astype(np.int64), bounds)))
            self.groups[column] = groups
        empty = np.zeros(0, dtype=np.int64)
        return groups.get(value, empty) if value else empty   # a value "" names no bucket

    def targets(self, key: _Key) -> Tuple[np.ndarray, int]:
        """The OSD ids the entry reaches, and its level within its section (higher wins)."""
        ids = self.all if key.osd < 0 else np.array([key.osd], dtype=np.int64)
        precision = self.levels - 1
        if key.device_class:
            ids = self._within(ids, _CLASS, key.device_class)
            precision = self.precision[_CLASS]
        if key.location_type:
            if key.location_type not in self.precision or key.location_type == _CLASS:
                # a CRUSH type the caller did not give: the OSD's location lacks it
                return np.zeros(0, dtype=np.int64), 0
            ids = self._within(ids, key.location_type, key.location_value)
            precision = self.precision[key.location_type]
        return ids, self.levels - 1 - precision

    def _within(self, ids: np.ndarray, column: str, value: str) -> np.ndarray:
        if ids.size == 1 and ids is not self.all:
            return ids if self.columns[column][int(ids[0])] == value and value else ids[:0]
        group = self.members(column, value)
        return group if ids is self.all else np.intersect1d(ids, group, assume_unique=True)


def _apply(osds: _Osds, key: _Key, value: int, vectors: Tuple[np.ndarray, np.ndarray]) -> int:
    """Set `value` where the entry outranks what is set (a later section, or a more precise
    mask in the same one; an equal rank is a later entry, and wins). Returns the OSDs seen."""
    values, ranks = vectors
    ids, level = osds.targets(key)
    rank = key.section * osds.levels + level
    won = ids[ranks[ids] <= rank]
    values[won] = value
    ranks[won] = rank
    return int(ids.size)


def _locations(hosts: Sequence[Optional[str]], ancestors: Optional[Mapping[str, Sequence[Optional[str]]]],
               count: int) -> Dict[str, Sequence[Optional[str]]]:
    locations: Dict[str, Sequence[Optional[str]]] = {"host": hosts}
    for t, names in (ancestors or {}).items():
        if t in ("host", _CLASS) or len(names) != count:
            raise ValueError(f"ancestors: '{t}' is host or class, or not one name per OSD")
        locations[t] = names
    return locations


def osd_settings(dump: Optional[Sequence[Mapping[str, Any]]], hosts: Sequence[Optional[str]],
                 classes: Sequence[Optional[str]], fallback: Mapping[str, int], *,
                 ancestors: Optional[Mapping[str, Sequence[Optional[str]]]] = None
                 ) -> Dict[str, np.ndarray]:
    """Each setting of OSD_SETTINGS for every OSD id: name -> int64 vector (read-only) over
    the ids 0..len(hosts)-1, as the mon would resolve it from `dump` (`ceph config dump -f
    json`; None: no dump) for osd.<id>, whose CRUSH host is hosts[id] and device class
    classes[id] (None: none). Where no entry applies, fallback[name] (the caller's: Ceph's
    defaults, or the CLI's or the mgr's own value; OSD_SETTINGS where it lacks the name or is None).

    `ancestors`: the OSDs' other CRUSH locations, type name -> one bucket name per OSD, in
    CRUSH type order (finer first; host ranks before them all), for masks such as
    "rack:r1"; a mask of a type not given matches no OSD.

    Raises AdvisorError(EINVAL) for a dump that is not a list of objects and for a value of
    OSD_SETTINGS that Ceph would not read, is negative or is above MAX_SETTING, naming its
    section, option and value; entries of other options are not read.
    """
    count = len(hosts)
    if len(classes) != count:
        raise ValueError(f"{len(classes)} device classes for {count} hosts")
    osds = _Osds(_locations(hosts, ancestors, count), classes, count)
    base = {name: as_int(default if fallback.get(name) is None else fallback[name],
                         f"the fallback {name}", 0, MAX_SETTING)
            for name, default in OSD_SETTINGS.items()}
    entries = _read(dump, count) if dump is not None else {}
    vectors = {name: (np.full(count, v, dtype=np.int64), np.full(count, -1, dtype=np.int64))
               for name, v in base.items()}
    for key, value in entries.items():
        _apply(osds, key, value, vectors[key.name])
    return {name: frozen(values) for name, (values, _) in vectors.items()}
