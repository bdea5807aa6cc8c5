"""When a plan's moves have taken effect: every PG of its pools active+clean on the OSDs the
map puts it on. A plan whose last step was sent is not done while its data still moves, as
Ceph's own progress events complete only once the PGs are clean."""
from typing import Iterable, NamedTuple, Optional, Tuple

import numpy as np

from ..crush.placement import Placer
from ..model.constants import CRUSH_ITEM_NONE, NO_OSD
from ..model.snapshot import Pool, Snapshot


class Moving(NamedTuple):
    pgs: int          # PGs not yet active+clean where the map puts them
    example: str      # one of them, as a sentence's end ("1.1 active+remapped+backfilling")


def _plain(m: np.ndarray, width: int) -> np.ndarray:
    """OSD matrix at `width` columns, holes and padding alike as NO_OSD."""
    out = np.full((m.shape[0], width), NO_OSD, np.int64)
    w = min(width, m.shape[1])
    out[:, :w] = m[:, :w]
    out[(out < 0) | (out == CRUSH_ITEM_NONE)] = NO_OSD
    return out


def clean(state: str) -> bool:
    """active+clean, scrubbing allowed; remapped (up is not acting) is not."""
    return state.startswith("active+clean") and "remapped" not in state


def clean_rows(states: Tuple[str, ...]) -> np.ndarray:
    """clean() of every row: judged once per distinct state (a handful), looked up per row
    in C (map over a dict's __getitem__), not a Python test per PG."""
    verdict = {s: clean(s) for s in set(states)}
    return np.fromiter(map(verdict.__getitem__, states), bool, len(states))


def still_moving(snap: Snapshot, pools: Iterable[Pool]) -> Optional[Moving]:
    """The PGs of `pools` whose data has not yet settled: missing from the PG stats (a split's
    children not reported), not active+clean, acting elsewhere than up, or up elsewhere
    than the map (the stats lag a new map by seconds). None when all have settled."""
    pgs = snap.pgs
    if pgs is None:
        return Moving(0, "no PG stats yet")
    placer = Placer.of(snap)
    unclean_all = ~clean_rows(pgs.state)
    count, example = 0, ""
    for pool in sorted(pools, key=lambda p: p.id):
        rows = np.flatnonzero((pgs.pool == pool.id) & (pgs.ps < pool.pg_num))
        unseen = pool.pg_num - int(np.unique(pgs.ps[rows]).size)
        if unseen > 0:
            count += unseen
            example = example or f"{unseen} PGs of pool {pool.name} not in the PG stats yet"
        m = placer.map_pool(pool)
        width = m.up.shape[1]
        want = _plain(m.up, width)[pgs.ps[rows]]
        up, acting = _plain(pgs.up[rows], width), _plain(pgs.acting[rows], width)
        unclean = unclean_all[rows]
        bad = np.flatnonzero(unclean | (up != acting).any(axis=1) | (up != want).any(axis=1))
        if bad.size:
            count += int(bad.size)
            i = int(rows[bad[0]])
            b = bad[0]
            where = ("" if unclean[b] else
                     f" up {up[b].tolist()}, the map says {want[b].tolist()}" if (up[b] != want[b]).any()
                     else f" acting {acting[b].tolist()}, up {up[b].tolist()}")
            example = example or f"{pool.id}.{int(pgs.ps[i]):x} {pgs.state[i]}{where}"
    return Moving(count, example) if count else None
