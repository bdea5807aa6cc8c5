"""What the tests of container/ share: the files, and the cephadm spec as cephadm reads it."""
import copy
from pathlib import Path
from typing import Any, Dict, List

import yaml

from ..cluster import REPO

CONTAINER = REPO / "container"
SPEC = CONTAINER / "cephadm-mgr-bindmount.yaml"
MODULE_DIR = "/usr/share/ceph/mgr/pg_advisor"
SPEC_SOURCE = "/usr/local/share/ceph/mgr/pg_advisor"     # where the spec mounts it from


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def parsed(spec: Dict[str, Any]) -> Any:
    """cephadm's own parse of a service spec (what `ceph orch apply -i` runs first)."""
    from ceph.deployment.service_spec import ServiceSpec
    return ServiceSpec.from_json(copy.deepcopy(spec))


def container_args(spec: Any) -> List[str]:
    """The arguments cephadm adds to the container's command line (Reef on: ArgumentSpecs)."""
    out: List[str] = []
    for a in spec.extra_container_args or []:
        out += a.to_args() if hasattr(a, "to_args") else [a]
    return out
