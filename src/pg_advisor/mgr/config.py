"""The module's options as the mgr gives them, each checked: one bad value falls back to its
default instead of stopping every command and the background."""
from typing import Any, Callable, Dict, List, Tuple

from ..model import options
from ..model.errors import AdvisorError


def read_options(get: Callable[[str], Any]) -> Tuple[options.Options, List[str]]:
    """The module's options from `get` (the mgr's get_module_option), and a sentence for each
    value the mon let through that we cannot use (it passes 'nan' for a float): that one
    falls back to its default, so that one bad value does not stop every command and the
    background."""
    good: Dict[str, Any] = {}
    bad: List[str] = []
    for spec in options.SPECS:
        raw = get(spec.name)
        if raw is None:
            continue
        try:
            options.coerce(spec.name, raw)
            good[spec.name] = raw
        except AdvisorError as e:
            bad.append(f"{e.message}; using the default {spec.default}")
    return options.make(good), bad
