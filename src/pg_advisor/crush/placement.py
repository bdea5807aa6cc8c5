"""From a pool's PGs to their up sets, the way OSDMap does it around CRUSH.

Placement seed (stable_mod over pgp_num, hashed with the pool id under hashpspool),
crush_do_rule with the pool's choose_args, then: drop OSDs that do not exist,
apply pg_upmap, pg_upmap_items and pg_upmap_primaries, drop down OSDs, pick the primary and apply
primary affinity. Replicated pools shift left; erasure-coded pools keep positions
and mark holes with CRUSH_ITEM_NONE.
"""
import dataclasses
import hashlib
import threading
from dataclasses import dataclass
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE, WEIGHT_ONE
from ..model.snapshot import Pool, Rule, Snapshot
from .compiled import ChooseArgs, CompiledCrush, compile_crush
from .hashing import hash32_2
from .descent import CrushWork, RunContext
from .mapper import do_rule
from .upmap import apply_upmap

RULE_TYPE = {"replicated": 1, "erasure": 3}
MAX_AFFINITY = WEIGHT_ONE
# CRUSH results a placer keeps (entries of its up-set matrices): sizing and plans map the
# same pool at the same pg_num several times, and a map whose draws keep failing (an item
# CRUSH must reject at every try) costs a second per run
CACHE_MAX = 1 << 23
Seeds = Tuple[np.ndarray, np.ndarray]      # (sets by folded seed, which seeds are mapped)


def stable_mod(x: np.ndarray, b: int) -> np.ndarray:
    """ceph_stable_mod: x mod b that only moves half the inputs when b doubles."""
    mask = (1 << max(b - 1, 0).bit_length()) - 1
    return np.where((x & mask) < b, x & mask, x & (mask >> 1))


def folded(pool: Pool, ps: np.ndarray, pgp_num: Optional[int] = None) -> np.ndarray:
    """The seed each PG ps is placed by at pgp_num (the pool's own when None)."""
    return stable_mod(ps, pgp_num if pgp_num is not None else pool.pgp_num)


def seed_inputs(pool: Pool, m: np.ndarray) -> np.ndarray:
    """CRUSH's input x for each folded seed m (hashed with the pool id under hashpspool)."""
    if pool.hashpspool:
        return hash32_2(m, np.int64(pool.id)).astype(np.int64)
    return (m + pool.id) & 0xFFFFFFFF


def placement_seeds(pool: Pool, ps: np.ndarray, pgp_num: Optional[int] = None) -> np.ndarray:
    """pg_pool_t::raw_pg_to_pps for each placement seed ps."""
    return seed_inputs(pool, folded(pool, ps, pgp_num))


@dataclass(frozen=True)
class PoolMapping:
    pool: Pool
    ps: np.ndarray         # (n,) placement seeds 0..pg_num-1
    up: np.ndarray         # (n, size); replicated: -1 padding, EC: CRUSH_ITEM_NONE holes
    up_primary: np.ndarray  # (n,) -1 when none

    def pgid(self, i: int) -> str:
        return f"{self.pool.id}.{int(self.ps[i]):x}"

    def up_list(self, i: int) -> list:
        row = self.up[i].tolist()
        return [o for o in row if o != -1] if self.pool.type == "replicated" else row


class UpSets(NamedTuple):
    """Up sets as primary affinity reads them, and changes in place (OSDMap's osds and
    primary, for many PGs)."""
    up: np.ndarray          # (n, size); a replicated pool's new primary moves to the front
    primary: np.ndarray     # (n,)
    valid: np.ndarray       # (n, size) where an OSD is
    aff: np.ndarray         # (n, size) each OSD's primary affinity, MAX_AFFINITY where none


def osd_weights(snap: Snapshot) -> np.ndarray:
    """Each OSD's weight as CRUSH reads it (16.16; 0 when out or not there)."""
    osds = snap.osds
    return np.rint(osds.reweight * WEIGHT_ONE).astype(np.int64) * osds.exists


def crush_inputs(snap: Snapshot, weight: Optional[np.ndarray] = None) -> bytes:
    """A digest of what CRUSH's sets depend on besides the pools: the buckets (with what
    the binary map stored for them), rules, tunables and weight sets, and each OSD's
    existence and `weight` (None: the snapshot's). Placers with the same digest map every
    pool's seeds alike, whatever else their maps change."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((sorted(snap.tunables.items()), sorted(snap.rules.items()),
                   sorted(snap.choose_args.items()))).encode())
    for bid in sorted(snap.buckets):
        b = snap.buckets[bid]
        h.update(repr((bid, b.alg, b.hash, b.type_id, b.items.size, len(b.stored))).encode())
        h.update(b.items.astype(np.int64).tobytes())
        h.update(b.fixed_weights.tobytes() + np.asarray(b.stored, dtype=np.int64).tobytes())
    h.update((osd_weights(snap) if weight is None else weight).astype(np.int64).tobytes())
    h.update(snap.osds.exists.astype(bool).tobytes())
    return h.digest()


class Placer:
    """Maps pools of one snapshot; the compiled CRUSH map is built once and reused."""

    def __init__(self, snap: Snapshot, crush: Optional[CompiledCrush] = None) -> None:
        self.snap = snap
        self.crush: CompiledCrush = crush if crush is not None else compile_crush(snap)
        self._cache: Dict[Tuple[object, ...], Tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # each pool's CRUSH sets by folded seed: a seed is mapped once whatever pg_num and
        # pgp_num ask for it (a split plan's search over pgp_num, the sizer's pg_nums)
        self._seeds: Dict[Tuple[object, ...], Seeds] = {}
        # the snapshot's placer serves the background and commands at once: a table grows
        # by a copy, and a seed stored meanwhile would be lost from it
        self._tables = threading.RLock()
        self._cached = 0
        self.work = CrushWork()      # shared with with_osds' placers: one count for the map
        osds = snap.osds
        self.exists = osds.exists
        self.up_state = osds.up & osds.exists
        self.weight = osd_weights(snap)
        self.affinity = np.rint(osds.primary_affinity * WEIGHT_ONE).astype(np.int64)
        # (placer, OSDs whose weight this one lowers): with_osds' results derive from it
        self._base: Optional[Tuple["Placer", np.ndarray]] = None
        self._inputs: Optional[bytes] = None      # crush_inputs, when asked (carry)

    @staticmethod
    def carry(before: Snapshot, snap: Snapshot) -> bool:
        """Give `snap`, a newer read of the same cluster, the CRUSH sets `before`'s placer
        holds, if CRUSH maps both alike: True if it did. The mgr reads a new snapshot at
        each map epoch, and most epochs change no CRUSH input (pg-upmap-items, pg_temp, an
        OSD marked down, a pool's flags): mapped again, 2^20 PGs on 20,000 OSDs cost 11 s
        of CRUSH a balance round. Cost follows change: what differs is mapped, not all."""
        old: Optional[Placer] = before.memo.get("placer")
        if old is None or "placer" in snap.memo or old.inputs() != crush_inputs(snap):
            return False
        new = Placer(snap, old.crush)
        new._inputs = old._inputs
        # only the new map's pools at their own pg_num and pgp_num: what a split's search or
        # a deleted pool left would fill the cache for good
        live = {Placer._key(p, None, None) for p in snap.pools}
        seeds = {Placer._seed_key(p) for p in snap.pools}
        with old._tables:      # (tables the old one's readers may still grow: copied)
            new._cache = {k: v for k, v in old._cache.items() if k in live}     # (read-only: shared)
            new._seeds = {k: (sets.copy(), known.copy()) for k, (sets, known) in old._seeds.items()
                          if k in seeds}
        new._cached = (sum(v[2].size for v in new._cache.values())
                       + sum(sets.size for sets, _ in new._seeds.values()))
        return snap.memo.setdefault("placer", new) is new

    def inputs(self) -> bytes:
        """crush_inputs of this placer's snapshot (once)."""
        if self._inputs is None:
            self._inputs = crush_inputs(self.snap, self.weight)
        return self._inputs

    @staticmethod
    def of(snap: Snapshot) -> "Placer":
        """The snapshot's shared placer: every reader of one snapshot (status, plan, the
        executor's tick) maps each pool once, and a snapshot the mgr reuses while the
        cluster is unchanged costs no CRUSH run at all."""
        placer: Optional[Placer] = snap.memo.get("placer")
        if placer is None:
            placer = snap.memo.setdefault("placer", Placer(snap))
        return placer

    def with_osds(self, reweight: Optional[Mapping[int, float]] = None) -> "Placer":
        """A placer for the same map with some OSDs reweighted (0 = out)."""
        p = Placer.__new__(Placer)
        p.__dict__.update(self.__dict__)
        w = self.weight.copy()
        for osd, v in (reweight or {}).items():
            w[osd] = int(round(v * WEIGHT_ONE))
        p.weight = w
        # results under other weights are not these
        p._cache, p._seeds, p._tables, p._cached, p._inputs = {}, {}, threading.RLock(), 0, None
        # an OSD's weight only decides whether CRUSH keeps it once drawn (a draw that fails
        # is retried as a collision is): lowered weights change only the PGs that hold one
        # of those OSDs now, so those alone are mapped again (raised ones may change any)
        lowered = np.flatnonzero(w < self.weight)
        p._base = (self, lowered) if not (w > self.weight).any() else None
        return p

    def map_pool(self, pool: Pool, pg_num: Optional[int] = None,
                 pgp_num: Optional[int] = None, upmaps: bool = True) -> PoolMapping:
        ps, pps, raw = self._crush(pool, pg_num, pgp_num)
        return self._finish(pool, ps, pps, raw, upmaps)

    def up_rows(self, pool: Pool, pgp_num: int, ps: np.ndarray) -> np.ndarray:
        """The up sets of the PGs with seeds `ps` (upmaps applied, down OSDs dropped) at
        `pgp_num`, from a CRUSH run over those PGs alone: what a step that changes a few
        PGs' placement costs, not a map of the whole pool (at 320,000 PGs, 2.7 s a map and
        some 700 maps for one split plan)."""
        ps = np.asarray(ps, dtype=np.int64)
        return self._up(pool, self._apply_upmaps(pool, ps, self.raw_rows(pool, pgp_num, ps)))

    def raw_rows(self, pool: Pool, pgp_num: int, ps: np.ndarray) -> np.ndarray:
        """CRUSH's own sets (crush_sets: no upmaps, nonexistent OSDs dropped) of the PGs
        with seeds `ps` alone."""
        return self._raw_of(pool, folded(pool, np.asarray(ps, dtype=np.int64), pgp_num))

    def with_upmaps(self, pg_upmap: Mapping[str, Tuple[int, ...]],
                    pg_upmap_items: Mapping[str, Tuple[Tuple[int, int], ...]],
                    pg_upmap_primaries: Optional[Mapping[str, int]] = None) -> "Placer":
        """A placer for the same map and weights with other upmaps (CRUSH's results, which
        do not depend on them, are shared); the pg_upmap_primaries stay unless given."""
        p = Placer.__new__(Placer)
        p.__dict__.update(self.__dict__)
        primaries = self.snap.pg_upmap_primaries if pg_upmap_primaries is None else pg_upmap_primaries
        p.snap = dataclasses.replace(self.snap, pg_upmap=pg_upmap, pg_upmap_items=pg_upmap_items,
                                     pg_upmap_primaries=primaries)
        return p

    def upmapped(self, pool: Pool, pg_num: Optional[int] = None,
                 pgp_num: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(PG seeds, CRUSH's sets with the upmaps applied), down OSDs kept: the sets the
        mon checks its upmaps on."""
        ps, pps, raw = self._crush(pool, pg_num, pgp_num)
        return ps, self._apply_upmaps(pool, ps, raw)

    def crush_sets(self, pool: Pool, pg_num: Optional[int] = None,
                   pgp_num: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(PG seeds, CRUSH's own sets): nonexistent OSDs dropped, down ones kept, no
        upmaps; the sets Ceph applies a PG's items to (read-only, shared)."""
        ps, _, raw = self._crush(pool, pg_num, pgp_num)
        return ps, raw

    def up_sets(self, pgids: Sequence[str]) -> Dict[str, List[int]]:
        """pgid -> its up set on this map (replicated: no padding; EC: holes as NONE);
        PGs of pools the map does not have, or past their pg_num, are left out."""
        pools = {p.id: p for p in self.snap.pools}
        out: Dict[str, List[int]] = {}
        wanted: Dict[int, List[Tuple[str, int]]] = {}
        for pgid in pgids:
            head, tail = pgid.split(".")
            pool = pools.get(int(head))
            if pool is not None and int(tail, 16) < pool.pg_num:
                wanted.setdefault(pool.id, []).append((pgid, int(tail, 16)))
        for pool_id, pgs in wanted.items():
            m = self.map_pool(pools[pool_id])
            for pgid, seed in pgs:
                out[pgid] = m.up_list(seed)
        return out

    def map_pool_raw_and_up(self, pool: Pool) -> Tuple[PoolMapping, PoolMapping]:
        """The pool without and with its upmap items, from one CRUSH run."""
        ps, pps, raw = self._crush(pool, None, None)
        return self._finish(pool, ps, pps, raw, False), self._finish(pool, ps, pps, raw, True)

    @staticmethod
    def _key(pool: Pool, pg_num: Optional[int], pgp_num: Optional[int]) -> Tuple[object, ...]:
        """Everything a pool's CRUSH result depends on besides the map and the weights."""
        return (pool.id, pool.type, pool.size, pool.crush_rule, pool.hashpspool,
                pg_num if pg_num is not None else pool.pg_num,
                pgp_num if pgp_num is not None else pool.pgp_num)

    def _keep(self, key: Tuple[object, ...], out: Tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        if self._cached + out[2].size <= CACHE_MAX:
            for a in out:
                a.setflags(write=False)    # shared by later callers: nobody may edit it
            self._cache[key] = out
            self._cached += out[2].size

    def _batch(self, pool: Pool) -> None:
        """Map, in one CRUSH run, every pool of the map that shares `pool`'s rule, size, type
        and weight set (at its own pg_num and pgp_num): a thousand small pools cost one run's
        overhead, not a thousand."""
        self.prefetch([(p, None, None) for p in self.snap.pools
                       if (p.crush_rule, p.size, p.type) == (pool.crush_rule, pool.size, pool.type)])

    def prefetch(self, wanted: Sequence[Tuple[Pool, Optional[int], Optional[int]]]) -> None:
        """Map each (pool, pg_num, pgp_num) not mapped yet (None: the pool's own), in one
        CRUSH run per rule, size, type and weight set, and keep the results for map_pool
        and the rest: CRUSH's fixed cost per run (some 5 ms) is paid once per group, not per
        pool (the sizer asks for a thousand pools at their recommended pg_num). Only seeds
        not mapped yet are run; with a base (with_osds), only those on a lowered OSD. A
        group the cache cannot hold is left to be mapped pool by pool."""
        groups: Dict[Tuple[object, ...], List[Tuple[Pool, Optional[int], Optional[int]]]] = {}
        seen: Set[Tuple[object, ...]] = set()
        for pool, pg_num, pgp_num in wanted:
            key = self._key(pool, pg_num, pgp_num)
            count = pg_num if pg_num is not None else pool.pg_num
            if key in self._cache or key in seen or not count:
                continue
            seen.add(key)
            _, args = self._rule_args(pool)
            groups.setdefault((pool.crush_rule, pool.size, pool.type, id(args)), []).append(
                (pool, pg_num, pgp_num))
        for group in groups.values():
            first = group[0][0]
            rule, _ = self._rule_args(first)
            total = sum((n if n is not None else p.pg_num) for p, n, _ in group) * first.size
            if rule is None or len(group) < 2 or self._cached + 2 * total > CACHE_MAX:
                continue
            needs: Dict[int, Tuple[Pool, np.ndarray]] = {}
            for p, n, m in group:
                seeds = folded(p, np.arange(n if n is not None else p.pg_num, dtype=np.int64), m)
                have = needs.get(p.id, (p, seeds[:0]))[1]
                needs[p.id] = (p, np.union1d(have, self._unknown(p, seeds)))
            asked = [(p, need) for p, need in needs.values() if need.size]
            with self._tables:
                for (p, need), got in zip(asked, self._map_seeds(asked)):
                    self._store(p, need, got)
            for p, n, m in group:
                self._fill(p, n, m)

    def _crush(self, pool: Pool, pg_num: Optional[int],
               pgp_num: Optional[int]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        key = self._key(pool, pg_num, pgp_num)
        hit = self._cache.get(key)
        if hit is None and key == self._key(pool, None, None):
            self._batch(pool)
            hit = self._cache.get(key)
        return hit if hit is not None else self._fill(pool, pg_num, pgp_num)

    def _fill(self, pool: Pool, pg_num: Optional[int],
              pgp_num: Optional[int]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pool's (seeds, CRUSH inputs, sets) at pg_num and pgp_num from its seed table
        (the seeds not in it mapped), kept for the next caller."""
        ps = np.arange(pg_num if pg_num is not None else pool.pg_num, dtype=np.int64)
        m = folded(pool, ps, pgp_num)
        out = ps, seed_inputs(pool, m), self._raw_of(pool, m)
        self._keep(self._key(pool, pg_num, pgp_num), out)
        return out

    # -- CRUSH's sets by folded seed ---------------------------------------------------------------

    @staticmethod
    def _seed_key(pool: Pool) -> Tuple[object, ...]:
        """What a seed's set depends on besides the map and the weights."""
        return (pool.id, pool.type, pool.size, pool.crush_rule, pool.hashpspool)

    def _unknown(self, pool: Pool, m: np.ndarray) -> np.ndarray:
        """The distinct seeds of m this placer has not mapped yet, sorted."""
        known = self._seeds.get(self._seed_key(pool), (None, np.zeros(0, bool)))[1]
        inside = m < known.size
        have = np.zeros(m.size, bool)
        have[inside] = known[m[inside]]
        return np.unique(m[~have])

    def _raw_of(self, pool: Pool, m: np.ndarray) -> np.ndarray:
        """CRUSH's sets (nonexistent OSDs dropped) of folded seeds m, a new array; the
        seeds not mapped yet mapped in one run and kept."""
        with self._tables:      # (one thread maps a seed; the other then finds it)
            need = self._unknown(pool, m)
            got = self._map_seeds([(pool, need)])[0] if need.size else None
            if got is not None and not self._store(pool, need, got):
                # no room to keep them: the known ones from the table, the rest from this run
                out = np.empty((m.size, pool.size), dtype=np.int64)
                fresh = np.isin(m, need)
                out[fresh] = got[np.searchsorted(need, m[fresh])]
                if (~fresh).any():
                    out[~fresh] = self._seeds[self._seed_key(pool)][0][m[~fresh]]
                return out
            if not m.size:
                return np.zeros((0, pool.size), dtype=np.int64)
            return self._seeds[self._seed_key(pool)][0][m]

    def _store(self, pool: Pool, need: np.ndarray, got: np.ndarray) -> bool:
        """Keep the sets `got` of seeds `need` in the pool's table, grown to hold them if
        the cache has room (False: it has not)."""
        key = self._seed_key(pool)
        sets, known = self._seeds.get(key, (np.zeros((0, pool.size), np.int64), np.zeros(0, bool)))
        top = int(need[-1]) + 1
        if top > known.size:
            grow = (top - known.size) * pool.size
            if self._cached + grow > CACHE_MAX:
                return False
            sets = np.concatenate([sets, np.zeros((top - known.size, pool.size), np.int64)])
            known = np.concatenate([known, np.zeros(top - known.size, bool)])
            self._cached += grow
            self._seeds[key] = sets, known
        sets[need] = got
        known[need] = True
        return True

    def _map_seeds(self, wanted: Sequence[Tuple[Pool, np.ndarray]]) -> List[np.ndarray]:
        """CRUSH's sets (nonexistent OSDs dropped) of each (pool, folded seeds), the pools of
        one rule, size, type and weight set: one CRUSH run for all. With a base (with_osds),
        the base's sets, and only those holding a lowered OSD mapped again."""
        if not wanted:
            return []
        first = wanted[0][0]
        rule, args = self._rule_args(first)
        if rule is None:
            none = [np.full((m.size, p.size), CRUSH_ITEM_NONE, dtype=np.int64) for p, m in wanted]
            return [self._drop(p, raw, self._exists(raw)) for (p, _), raw in zip(wanted, none)]
        outs: List[np.ndarray] = []
        redo: List[np.ndarray] = []
        for pool, m in wanted:
            if self._base is None:
                outs.append(np.zeros((m.size, pool.size), dtype=np.int64))
                redo.append(np.arange(m.size))
            else:
                parent, lowered = self._base
                before = parent._raw_of(pool, m)
                outs.append(before)
                redo.append(np.flatnonzero(np.isin(before, lowered).any(axis=1)) if lowered.size
                            else lowered[:0])
        todo = np.concatenate([seed_inputs(p, m[r]) for (p, m), r in zip(wanted, redo)])
        if todo.size:
            raw, _ = do_rule(RunContext(self.crush, args, self.weight, self.work), rule, todo, first.size)
            raw = self._drop(first, raw, self._exists(raw))
            start = 0
            for out, r in zip(outs, redo):
                out[r] = raw[start:start + r.size]
                start += r.size
        return outs

    def _finish(self, pool: Pool, ps: np.ndarray, pps: np.ndarray, raw: np.ndarray,
                upmaps: bool) -> PoolMapping:
        if upmaps:
            raw = self._apply_upmaps(pool, ps, raw)
        up = self._up(pool, raw)
        primary = self._primaries(pool, pps, up)
        return PoolMapping(pool=pool, ps=ps, up=up, up_primary=primary)

    # -- the OSDMap steps -------------------------------------------------------------------------

    def _rule_args(self, pool: Pool) -> Tuple[Optional[Rule], Optional[ChooseArgs]]:
        """The pool's CRUSH rule (None: no rule fits its type and size) and weight set."""
        rule = self.crush.find_rule(pool.crush_rule, RULE_TYPE.get(pool.type, -1), pool.size)
        return rule, self.crush.choose_args.get(pool.id, self.crush.choose_args.get(-1))

    def _up(self, pool: Pool, raw: np.ndarray) -> np.ndarray:
        """The up sets: OSDs that do not exist or are down dropped."""
        up = self.up_state[np.clip(raw, 0, len(self.up_state) - 1)]
        return self._drop(pool, raw, self._exists(raw) & up)

    def _exists(self, osds: np.ndarray) -> np.ndarray:
        inside = (osds >= 0) & (osds < len(self.exists))
        return inside & self.exists[np.clip(osds, 0, len(self.exists) - 1)]

    @staticmethod
    def _drop(pool: Pool, raw: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Replicated: shift the kept OSDs left (pad -1). EC: holes become NONE."""
        if pool.type != "replicated":
            return np.where(keep, raw, CRUSH_ITEM_NONE)
        order = np.argsort(~keep, axis=1, kind="stable")
        shifted = np.take_along_axis(raw, order, axis=1)
        kept = np.take_along_axis(keep, order, axis=1)
        return np.where(kept, shifted, -1)

    def _apply_upmaps(self, pool: Pool, ps: np.ndarray, raw: np.ndarray) -> np.ndarray:
        snap = self.snap
        prefix = f"{pool.id}."
        keys = [k for k in set(snap.pg_upmap) | set(snap.pg_upmap_items) | set(snap.pg_upmap_primaries)
                if k.startswith(prefix)]
        if not keys:
            return raw
        raw = raw.copy()
        # a seed's row: ps is 0 .. n-1 for a whole pool, any seeds for up_rows
        whole = ps.size == 0 or (int(ps[0]) == 0 and int(ps[-1]) == ps.size - 1)
        row_of = None if whole else {int(v): r for r, v in enumerate(ps.tolist())}
        for key in keys:
            seed = int(key.split(".")[1], 16)
            i = seed if row_of is None else row_of.get(seed, ps.size)
            if i >= ps.size:
                continue
            row = [o for o in raw[i].tolist() if o != -1] if pool.type == "replicated" \
                else raw[i].tolist()
            row = apply_upmap(row, snap.pg_upmap.get(key), snap.pg_upmap_items.get(key, ()), self.weight,
                              snap.pg_upmap_primaries.get(key))
            width = raw.shape[1]
            if len(row) > width:   # a pg_upmap longer than size: keep the map's length
                raw = np.pad(raw, ((0, 0), (0, len(row) - width)), constant_values=-1)
            raw[i, :] = -1 if pool.type == "replicated" else CRUSH_ITEM_NONE
            raw[i, :len(row)] = row
        return raw

    def _primaries(self, pool: Pool, pps: np.ndarray, up: np.ndarray) -> np.ndarray:
        valid = (up >= 0) & (up != CRUSH_ITEM_NONE)
        first = np.argmax(valid, axis=1)
        primary = np.where(valid.any(axis=1), up[np.arange(up.shape[0]), first], -1)
        aff = np.where(valid, self.affinity[np.clip(up, 0, len(self.affinity) - 1)], MAX_AFFINITY)
        special = np.flatnonzero((aff != MAX_AFFINITY).any(axis=1))
        if special.size:
            self._apply_affinity(pool, pps, UpSets(up, primary, valid, aff), special)
        return primary

    @staticmethod
    def _apply_affinity(pool: Pool, pps: np.ndarray, sets: UpSets, rows: np.ndarray) -> None:
        """OSDMap::_apply_primary_affinity on the rows that have a non-default affinity."""
        up, primary, valid, aff = sets
        sub = up[rows]
        coin = (hash32_2(pps[rows][:, None], sub) >> np.uint32(16)).astype(np.int64)
        accept = valid[rows] & ~((aff[rows] < MAX_AFFINITY) & (coin >= aff[rows]))
        fallback = valid[rows]
        has_accept = accept.any(axis=1)
        pos = np.where(has_accept, np.argmax(accept, axis=1), np.argmax(fallback, axis=1))
        some = fallback.any(axis=1)
        rr, pp = rows[some], pos[some]
        primary[rr] = up[rr, pp]
        if pool.type == "replicated":
            for r, p in zip(rr.tolist(), pp.tolist()):
                if p > 0:   # move the new primary to the front
                    up[r, 1:p + 1] = up[r, 0:p].copy()
                    up[r, 0] = primary[r]
