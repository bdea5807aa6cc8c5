"""The deployment files in container/ as the tools that read them read them: the cephadm mgr
spec through Ceph's own spec parser (the release's Python package: Tentacle's in the chroot,
Pacific's on the host), the Rook CephCluster against the fields of Rook's CRD
(rook-cephcluster-crd.json, a trimmed copy whose source it states), and the image recipe's
base and what it copies."""
import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ..cluster import REPO
from . import CONTAINER, MODULE_DIR, SPEC, SPEC_SOURCE, container_args, load, parsed

ROOK = CONTAINER / "rook-cephcluster.yaml"
CRD = Path(__file__).with_name("rook-cephcluster-crd.json")


def test_the_cephadm_spec_parses_as_a_mgr_service_with_the_module_mounted_read_only() -> None:
    spec = parsed(load(SPEC))
    assert spec.service_type == "mgr" and spec.service_id is None
    args = container_args(spec)
    mounts = [a.split("=", 1)[1] for a in args if a.startswith("--volume=")]
    assert len(args) == 1 and len(mounts) == 1, args
    src, dst, opts = mounts[0].split(":")
    assert Path(src).is_absolute() and Path(src).name == "pg_advisor"
    assert dst == MODULE_DIR and "ro" in opts.split(","), mounts
    # what CMake installs with the prefix the spec's comment gives is the directory mounted
    assert src == SPEC_SOURCE
    assert "-DCMAKE_INSTALL_PREFIX=/usr/local" in SPEC.read_text()
    # it survives cephadm's round trip (`ceph orch ls --export` prints to_json)
    assert container_args(parsed(spec.to_json())) == args


@pytest.mark.parametrize("change", [
    {"extra_container_arg": ["--volume=/a:/b:ro"]},    # a typo'd field
    {"placement": {"cont": 2}},                        # a typo'd placement field
    {"placement": {"count": 0}},                       # no mgr at all
])
def test_cephadms_parser_rejects_a_broken_spec(change: Dict[str, Any]) -> None:
    from ceph.deployment.service_spec import SpecValidationError
    spec = {**load(SPEC), **change}
    if "extra_container_arg" in change:
        del spec["extra_container_args"]
    with pytest.raises(SpecValidationError):
        parsed(spec)


def schema_errors(value: Any, schema: Dict[str, Any], path: str = "") -> List[str]:
    """Where `value` breaks the (trimmed) OpenAPI v3 schema: a field it does not define,
    a wrong type, a value outside its enum, range or pattern."""
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int}
    want = schema.get("type")
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null"]
    if want is not None and (not isinstance(value, kinds[want])
                             or (want == "integer" and isinstance(value, bool))):
        return [f"{path}: {type(value).__name__}, not {want}"]
    errors: List[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: {value} outside [{schema.get('minimum')}, {schema.get('maximum')}]")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if want == "object":
        props = schema.get("properties", {})
        errors += [f"{path}.{k}: not a field of the CRD" for k in value if k not in props]
        errors += [f"{path}.{k}: required" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                errors += schema_errors(v, props[k], f"{path}.{k}")
    if want == "array":
        for i, v in enumerate(value):
            errors += schema_errors(v, schema["items"], f"{path}[{i}]")
    return errors


def rook_errors(doc: Dict[str, Any]) -> List[str]:
    crd = json.loads(CRD.read_text())
    errors = [] if doc.get("apiVersion") == f"{crd['group']}/{crd['version']}" else ["apiVersion"]
    errors += [] if doc.get("kind") == crd["kind"] else ["kind"]
    return errors + schema_errors({"spec": doc.get("spec")}, crd["schema"])


def test_the_rook_example_sets_fields_rooks_crd_defines() -> None:
    doc = load(ROOK)
    assert rook_errors(doc) == []
    spec = doc["spec"]
    ours = [m for m in spec["mgr"]["modules"] if m["name"] == "pg_advisor"]
    assert ours == [{"name": "pg_advisor", "enabled": True}]
    # the image the example runs is the recipe built on the release the project tests
    tag = re.search(r"^ARG CEPH_IMAGE=\S+:(v[0-9.]+)$", (CONTAINER / "Containerfile").read_text(), re.M)
    assert tag is not None and spec["cephVersion"]["image"].endswith(":" + tag.group(1))
    # the trimmed CRD says where it was cut from
    source = json.loads(CRD.read_text())["source"]
    assert source["repository"] == "https://github.com/rook/rook"
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]) and source["path"] == "deploy/examples/crds.yaml"


@pytest.mark.parametrize("path, value, error", [
    (("spec", "mgr", "modules", 0, "enable"), True, "spec.mgr.modules[0].enable: not a field"),
    (("spec", "mgr", "module"), [], "spec.mgr.module: not a field"),
    (("spec", "cephVersion", "image"), 20, "spec.cephVersion.image: int, not string"),
    (("spec", "mgr", "count"), 6, "spec.mgr.count: 6 outside [0, 5]"),
    (("spec", "mgr", "modules", 0, "enabled"), "yes", "enabled: str, not boolean"),
    (("spec", "dataDirHostPath"), "var/lib/rook", "does not match"),
    (("kind",), "CephClusters", "kind"),
])
def test_the_rook_check_catches_a_broken_example(path: tuple, value: Any, error: str) -> None:
    doc = load(ROOK)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    errors = rook_errors(doc)
    assert any(error in e for e in errors), errors


def test_the_recipe_extends_the_named_ceph_image_with_the_module_alone() -> None:
    lines = [ln for ln in (CONTAINER / "Containerfile").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0].startswith("ARG CEPH_IMAGE=quay.io/ceph/ceph:v") and lines[1:] == [
        "FROM ${CEPH_IMAGE}", f"COPY src/pg_advisor {MODULE_DIR}"]
    ignore = (REPO / ".containerignore").read_text().split()
    assert "*" in ignore and "!src/pg_advisor" in ignore and "src/pg_advisor/tests" in ignore
