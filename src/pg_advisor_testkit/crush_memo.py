"""CRUSH's answers kept across the unit tests, for the tests that are not about CRUSH.

Most unit tests map the same few captured clusters again and again (a new snapshot and
placer per test): 86 % of the suite's crush_do_rule runs had been made before with the same
inputs, some 24 s of its 31 s of CRUSH (3,828 runs). `install` wraps the placer's do_rule
with a memo keyed by everything a run reads: the compiled map's contents, the rule, the
inputs, the reweights, the weight set, and the identity of every name in the
pg_advisor.crush modules (a test that patches the engine, as the CRUSH tests do to run the
literal algorithm, gets runs of its own). A run served from the memo gives a copy of the
sets and adds what the run had cost to the caller's CrushWork and to model/work.py's tally
(crush_replicas and crush_draws, as mapper.do_rule counts them), so that tests bounding
work count the same whatever ran before them.

The CRUSH tests themselves (test_crush*.py) never use it: `bypass` is set around them
(conftest.py), and so is every test when PG_ADVISOR_CRUSH_MEMO=0. Only the unit tests'
process installs it; the module, the CLI's children and qa/ never see it."""
import dataclasses
import hashlib
import sys
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from pg_advisor.crush import placement
from pg_advisor.crush.compiled import CompiledCrush
from pg_advisor.model.snapshot import Rule
from pg_advisor.crush.descent import RunContext
from pg_advisor.model.work import count

CELLS_MAX = 1 << 24        # int64 cells of sets kept in all (128 MiB)
RUN_CELLS_MAX = 1 << 20    # a run bigger than this is not kept

Result = Tuple[np.ndarray, np.ndarray]
DoRule = Callable[..., Result]


@dataclasses.dataclass(frozen=True)
class _Kept:
    res: np.ndarray
    rlen: np.ndarray
    draws: int
    replicas: int


class Memo:
    def __init__(self, real: DoRule) -> None:
        self.real = real
        self.bypass = False
        self.runs: Dict[Tuple[Any, ...], _Kept] = {}
        self.cells = 0
        self.hits = self.misses = 0
        self._maps: Dict[int, Tuple[Any, str]] = {}     # id(cm) -> (weakref, digest)
        self._lock = threading.Lock()

    def _map_digest(self, cm: CompiledCrush) -> str:
        kept = self._maps.get(id(cm))
        if kept is not None and kept[0]() is cm:
            return kept[1]
        h = hashlib.sha1()
        for a in (cm.items, cm.weights, cm.size, cm.type_id, cm.exists, cm.supported, cm.alg_id, cm.aux):
            h.update(repr((a.dtype.str, a.shape)).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(repr((cm.alg, cm.hashes, cm.max_devices, cm.tunables, sorted(cm.rules.items()))).encode())
        for i, ca in sorted(cm.choose_args.items()):
            h.update(repr(i).encode())
            _arrays(h, ca.weights, ca.positions, ca.ids)
        digest = h.hexdigest()
        self._maps[id(cm)] = (weakref.ref(cm), digest)
        return digest

    def key(self, ctx: RunContext, rule: Rule, x: np.ndarray, result_max: int) -> Tuple[Any, ...]:
        """All the run reads: ctx's map, weight set and reweights (its work only counts)."""
        args = ctx.args
        h = hashlib.sha1()
        _arrays(h, np.asarray(x, dtype=np.int64), np.asarray(ctx.dev_weight, dtype=np.int64))
        if args is not None:
            _arrays(h, args.weights, args.positions, args.ids)
        return (engine(), self._map_digest(ctx.cm), rule, int(result_max), args is None, h.hexdigest())

    def do_rule(self, ctx: RunContext, rule: Rule, x: np.ndarray, result_max: int) -> Result:
        if self.bypass:
            return self.real(ctx, rule, x, result_max)
        mine = ctx.work
        with self._lock:
            k = self.key(ctx, rule, x, result_max)
            kept = self.runs.get(k)
            if kept is None:
                self.misses += 1
                draws, replicas = mine.draws, mine.replicas
                res, rlen = self.real(ctx, rule, x, result_max)
                if res.size <= RUN_CELLS_MAX and self.cells + res.size <= CELLS_MAX:
                    self.cells += res.size
                    self.runs[k] = _Kept(res.copy(), rlen.copy(), mine.draws - draws,
                                         mine.replicas - replicas)
                return res, rlen
            self.hits += 1
            mine.draws += kept.draws
            mine.replicas += kept.replicas
            count("crush_replicas", kept.replicas)
            count("crush_draws", kept.draws)
            return kept.res.copy(), kept.rlen.copy()


def _arrays(h: Any, *arrays: np.ndarray) -> None:
    for a in arrays:
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())


def engine() -> int:
    """The identity of every name the CRUSH engine's modules hold (their classes' too): a
    test that patches one maps with the patch, not from the memo."""
    seen: List[Tuple[str, str, int]] = []
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("pg_advisor.crush.") or mod is None:
            continue
        for attr, value in vars(mod).items():
            seen.append((name, attr, id(value)))
            if isinstance(value, type) and value.__module__ == name:
                seen += [(attr, a, id(v)) for a, v in vars(value).items()]
    return hash(tuple(seen))


MEMO: Optional[Memo] = None


def install() -> Memo:
    """The memo in place of the placer's do_rule (placement.py calls it by that name), once."""
    global MEMO
    if MEMO is None:
        MEMO = Memo(placement.do_rule)
        placement.do_rule = MEMO.do_rule
    return MEMO
