"""container/Containerfile built and run as cephadm and Rook run it: on the host, with podman.

No registry is reachable here, so the base image is the Tentacle chroot the project already
builds (Debian forky's Ceph 20.2 packages), imported once and kept (`localhost/ceph:20.2.4`,
labelled with the chroot's identity; a changed chroot is imported anew). The recipe is built
on it; a ceph-mgr runs from the built image, in the network namespace of a test cluster of its
own (qa/cluster/vstart.sh in the chroot: netns pg-advisor-ctr, dir /tmp/pg-advisor-ctr), that
cluster's own mgr stopped. Then: the module loads from the image, answers, serves its panel;
its options, its stored plan and history, the pools' targets and a balance round's upmap items
outlive a disable and enable, a mgr on Ceph's image without the module, and a mgr restart on a
new image. Last, the cephadm spec's bind mount: Ceph's image alone, the module mounted into it.

Host only (podman runs here): qa/conftest.py keeps it out of the chroot's `pytest qa`;
qa/run-tests.sh runs it in stage 1 (`/usr/bin/python3 -m pytest qa/container/test_image_host.py`).
"""
import errno
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Sequence, Tuple

import pytest

from ..cluster import Cluster, HERE as CLUSTER_SCRIPTS, OPT, REPO, wait_until
from . import MODULE_DIR, SPEC, SPEC_SOURCE, container_args, load, parsed

NETNS = "pg-advisor-ctr"
CLUSTER_DIR = Path("/tmp/pg-advisor-ctr")          # a directory of the chroot
CONTAINERS_CONF = Path(__file__).with_name("containers.conf")
BASE = "localhost/ceph:20.2.4"                       # the chroot as Ceph's image
NEXT_BASE = "localhost/ceph:20.2.4-next"             # the same Ceph, another image ("an upgrade")
IMAGE = "localhost/ceph-pg-advisor:test"
NEXT_IMAGE = "localhost/ceph-pg-advisor:test-next"
MGR = "pg-advisor-ctr-mgr"                           # the container's name
MGR_ID = "ctr"
LABEL = "org.pg-advisor.chroot"
LOCK = "/run/lock/pg-advisor-ctr.lock"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="podman and the chroot need root")


def podman(*args: str, check: bool = True, timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    p = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p


def chroot() -> Path:
    return Path(subprocess.run(["bash", str(CLUSTER_SCRIPTS / "tentacle.sh"), "path"], check=True,
                               capture_output=True, text=True).stdout.strip())


class ChrootCluster(Cluster):
    """The test cluster in the chroot and netns pg-advisor-ctr: `ceph` runs there."""

    def __init__(self) -> None:
        super().__init__(CLUSTER_DIR)
        self.env["PG_ADVISOR_NETNS"] = NETNS
        self.root = chroot()

    def run(self, *args: str, timeout: float = 60) -> Tuple[int, str, str]:
        p = subprocess.run(["bash", str(CLUSTER_SCRIPTS / "tentacle.sh"), "exec", "ceph", *args],
                           env=self.env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def host_path(self, p: Path) -> Path:
        return self.root / p.relative_to("/")


def base_image() -> None:
    """The chroot as a base image, imported when there is none of this chroot (about a
    minute): its marker (Ceph's version and the package list) names it."""
    root = chroot()
    ident = hashlib.sha256((root / "etc" / "pg-advisor-tentacle").read_bytes()).hexdigest()[:16]
    p = podman("image", "inspect", "--format", "{{ index .Labels \"%s\" }}" % LABEL, BASE, check=False)
    if p.returncode != 0 or p.stdout.strip() != ident:
        old = podman("image", "inspect", "--format", "{{.Id}}", BASE, check=False).stdout.strip()
        # what the daemons' execs leave there (clusters in /tmp, mounts) stays out
        tar = subprocess.Popen(["tar", "-C", str(root), *[f"--exclude=./{d}/*" for d in (
            "tmp", "proc", "sys", "dev", "pg_advisor")], "-c", "."], stdout=subprocess.PIPE)
        try:
            podman("import", "--change", f"LABEL {LABEL}={ident}", "-", BASE, stdin=tar.stdout, timeout=900)
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            assert tar.wait() == 0
        if old:     # the image of an older chroot, untagged by the import
            podman("rmi", old, check=False)
    # "a new Ceph image": the same Ceph with a layer of its own, so a new image id
    with tempfile.TemporaryDirectory() as ctx:
        (Path(ctx) / "Containerfile").write_text(f"FROM {BASE}\nLABEL org.pg-advisor.next=1\n")
        podman("build", "--pull=never", "-q", "-t", NEXT_BASE, ctx)


def build(tag: str, base: str) -> str:
    """The recipe built on `base`, from the checkout as an operator builds it: its id."""
    podman("build", "--pull=never", "-q", "-f", str(REPO / "container" / "Containerfile"),
           "--build-arg", f"CEPH_IMAGE={base}", "-t", tag, str(REPO))
    return str(podman("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip())


@pytest.fixture(scope="module")
def one_at_a_time() -> Iterator[None]:
    """The test's names (netns, cluster directory, container, image tags) are fixed: a second
    run on the machine waits for the first (two at once tore each other's cluster down)."""
    with open(LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def images(one_at_a_time: None) -> Iterator[Dict[str, str]]:
    base_image()
    ids = {IMAGE: build(IMAGE, BASE), NEXT_IMAGE: build(NEXT_IMAGE, NEXT_BASE)}
    try:
        yield ids
    finally:
        for tag in ids:
            podman("rmi", "-f", tag, check=False)
        podman("rmi", NEXT_BASE, check=False)


def files(image: str) -> Dict[str, str]:
    """Every path of the image's filesystem -> its type, mode, size and link target
    (`find` in the image, run by podman from the image itself)."""
    out = podman("run", "--rm", "--network", "none", "--entrypoint", "find", image, "/", "-xdev",
                 "-not", "-path", "/proc/*", "-not", "-path", "/sys/*", "-not", "-path", "/dev/*",
                 "-not", "-path", "/run/*", "-not", "-path", "/etc/hostname", "-not", "-path", "/etc/hosts",
                 "-not", "-path", "/etc/resolv.conf", "-printf", "%p\\t%y %m %s %l\\n").stdout
    return dict(line.split("\t", 1) for line in out.splitlines())


def test_the_image_is_cephs_with_the_module_added_and_nothing_else(images: Dict[str, str]) -> None:
    base, built = files(BASE), files(IMAGE)
    changed = {p for p in base.keys() & built.keys() if base[p] != built[p]}
    added, removed = built.keys() - base.keys(), base.keys() - built.keys()
    # the module directory's parent is a directory with one more entry (its size may show it)
    assert removed == set() and changed <= {"/usr/share/ceph/mgr"}, (removed, changed)
    assert added and all(p == MODULE_DIR or p.startswith(MODULE_DIR + "/") for p in added), sorted(added)[:10]
    # readable by the user Ceph's images run the mgr as (ceph, not root): files o+r, dirs o+rx

    def others_may_read(entry: str) -> bool:
        kind, mode = entry.split()[:2]
        need = 0o005 if kind == "d" else 0o004
        return int(mode, 8) & need == need

    unreadable = [p for p in added if not others_may_read(built[p])]
    assert unreadable == [], unreadable[:10]
    # the same from the image's own layers: the recipe's layer adds the module's files and
    # touches only the directories above them
    layer = [(ln[0], ln[2:]) for ln in podman("image", "diff", IMAGE).stdout.splitlines()]
    parents = {"/usr", "/usr/share", "/usr/share/ceph", "/usr/share/ceph/mgr"}
    assert layer and all((kind == "A" and (p == MODULE_DIR or p.startswith(MODULE_DIR + "/")))
                         or (kind == "C" and p in parents) for kind, p in layer), layer[:10]
    # the files are the checkout's module package, byte for byte, without its tests
    src = REPO / "src" / "pg_advisor"
    want = {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*")
            if p.is_file() and "tests" not in p.relative_to(src).parts and "__pycache__" not in p.parts}
    mount = Path(podman("image", "mount", IMAGE).stdout.strip())
    try:
        mod = mount / MODULE_DIR.lstrip("/")
        got = {p.relative_to(mod).as_posix(): p.read_bytes() for p in mod.rglob("*") if p.is_file()}
    finally:
        podman("image", "unmount", IMAGE)
    assert "module.py" in want and "panel/panel.html" in want
    assert got == want, sorted(got.keys() ^ want.keys())
    # the module imports nothing the image lacks: numpy and cheroot from Ceph's own packages
    p = podman("run", "--rm", "--network", "none", "--entrypoint", "python3", IMAGE, "-c",
               "import numpy, cheroot, cherrypy; print(numpy.__version__)")
    assert p.stdout.strip()


# vstart's settings that are the chroot's paths: the module path (its directory of links to
# the checkout) and the run and crash directories
NOT_IN_CONTAINER = ("mgr module path", "run dir", "crash dir")


def test_the_offline_cli_runs_from_the_image(images: Dict[str, str]) -> None:
    """`python3 -m pg_advisor` on dumps, with the image's Python and numpy (doc/install.rst):
    the same answer as the checkout's on the host's Python."""
    dumps = REPO / "src" / "pg_advisor_testkit" / "fixtures" / "cluster6"
    args = ["--osdmap", "osd_dump.json", "--crush", "crush_dump.json", "--pg-dump", "pg_dump.json",
            "--df", "df.json", "status", "-f", "json"]
    image = podman("run", "--rm", "--network", "none", "-v", f"{dumps}:/dumps:ro", "-w", "/dumps",
                   "-e", "PYTHONPATH=/usr/share/ceph/mgr", "--entrypoint", "python3", IMAGE,
                   "-m", "pg_advisor", *args).stdout
    host = subprocess.run(["/usr/bin/python3", "-m", "pg_advisor", *args], cwd=dumps, check=True,
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src"))).stdout
    assert json.loads(image)["pools"] and json.loads(image) == json.loads(host)


def mgr_conf(c: ChrootCluster, where: Path) -> Path:
    """The container mgr's ceph.conf: the cluster's [global] (fsid, mon, messenger, auth)
    without vstart's paths, so the mgr loads modules where Ceph's image has them; its log
    to stderr (podman logs), as Ceph's images run their daemons."""
    glob = c.host_path(CLUSTER_DIR / "ceph.conf").read_text().split("\n[", 1)[0].splitlines()
    kept = [ln for ln in glob if ln.split("=", 1)[0].strip() not in NOT_IN_CONTAINER]
    assert kept[0] == "[global]" and any(ln.startswith("fsid") for ln in kept), kept
    where.mkdir(parents=True, exist_ok=True)
    (where / "ceph.conf").write_text("\n".join(kept + [
        "log to file = false", "log to stderr = true", "err to stderr = true",
        "admin socket = /run/ceph/$name.asok", ""]))
    return where


def redeploy_mgr(c: ChrootCluster, image: str, conf: Path, extra: Sequence[str] = ()) -> None:
    """What `ceph config set mgr container_image IMAGE` and `ceph orch redeploy mgr` do
    (doc/install.rst): the image set in the mon's config (the mon checks the option), and
    the mgr started anew from the image that config names."""
    c.ceph("config", "set", "mgr", "container_image", image)
    start_mgr(c.ceph("config", "get", "mgr", "container_image").strip(), conf, extra)


def start_mgr(image: str, conf: Path, extra: Sequence[str] = ()) -> None:
    """ceph-mgr from `image`, in the cluster's network namespace; its only mount the
    directory with its ceph.conf (and the keyring cephadm would put there), and what
    `extra` (arguments of podman run, as a spec's extra_container_args) adds. As user ceph,
    as cephadm runs it (`--setuser ceph --setgroup ceph`)."""
    podman("rm", "-f", "-t", "5", MGR, check=False)
    podman("run", "-d", "--name", MGR, "--network", f"ns:/run/netns/{NETNS}",
           "-v", f"{conf}:/etc/ceph:ro", *extra, "--entrypoint", "bash", image, "-c",
           f"mkdir -p /run/ceph /var/lib/ceph/mgr/ceph-{MGR_ID}"
           f" && chown ceph:ceph /run/ceph /var/lib/ceph/mgr/ceph-{MGR_ID}"
           f" && exec ceph-mgr -f -i {MGR_ID} --setuser ceph --setgroup ceph")


def stop_mgr() -> None:
    podman("rm", "-f", "-t", "10", MGR, check=False)


def mgr_log() -> str:
    return podman("logs", "--tail", "40", MGR, check=False).stderr


def active(c: ChrootCluster) -> bool:
    m = c.json("mgr", "stat")
    return bool(m["available"]) and m["active_name"] == MGR_ID


def answering(c: ChrootCluster) -> bool:
    return active(c) and c.run("pg-advisor", "status")[0] == 0


def panel(path: str) -> Tuple[int, bytes]:
    """GET the panel's `path` from inside the cluster's network namespace (its loopback)."""
    p = subprocess.run(["ip", "netns", "exec", NETNS, "/usr/bin/python3", "-c",
                        "import sys, urllib.request as u\n"
                        "r = u.urlopen('http://127.0.0.1:9285' + sys.argv[1], timeout=10)\n"
                        "sys.stdout.write(str(r.status) + '\\n'); sys.stdout.flush()\n"
                        "sys.stdout.buffer.write(r.read())", path], capture_output=True, timeout=30)
    if p.returncode != 0:
        return 0, p.stderr
    status, _, body = p.stdout.partition(b"\n")
    return int(status), body


def stored(c: ChrootCluster) -> Dict[str, Any]:
    """What pg_advisor keeps outside the mgr: its options (the mon's config database), its
    store (the mon's config-key store: the plan, its steps, the history) and the pools'
    targets it set (the OSDMap)."""
    opts = {e["name"]: e["value"] for e in c.json("config", "dump") if e["name"].startswith(OPT)}
    keys = [k for k in c.json("config-key", "ls") if k.startswith(OPT)]
    kv = {k: c.ceph("config-key", "get", k) for k in keys}
    pools = {p["pool_name"]: (p["pg_num_target"], p["pg_placement_num_target"])
             for p in c.json("osd", "pool", "ls", "detail")}
    return {"options": opts, "kv": kv, "pools": pools,
            "upmaps": c.json("osd", "dump")["pg_upmap_items"]}


def plan(c: ChrootCluster) -> Dict[str, Any]:
    return dict(c.json("pg-advisor", "progress")["plan"] or {})


@pytest.fixture(scope="module")
def ctr_cluster(one_at_a_time: None) -> Iterator[ChrootCluster]:
    """The test cluster: 4 OSDs on 4 hosts (a size-3 PG has an OSD to move to)."""
    c = ChrootCluster()
    try:
        c.vstart("start", "--osds", "4", "--hosts", "4")
        yield c
    finally:
        stop_mgr()
        if os.environ.get("PG_ADVISOR_KEEP_CLUSTER") != "1":
            c.vstart("stop")
            subprocess.run(["ip", "netns", "delete", NETNS], capture_output=True)


def test_a_mgr_from_the_image_runs_the_module_and_keeps_its_state(
        images: Dict[str, str], ctr_cluster: ChrootCluster, tmp_path: Path) -> None:
    c = ctr_cluster
    conf = mgr_conf(c, tmp_path / "etc-ceph")
    # nothing in the mon's config moves the module path either
    assert c.ceph("config", "get", "mgr", "mgr_module_path").strip() == "/usr/share/ceph/mgr"
    redeploy_mgr(c, IMAGE, conf)
    wait_until(lambda: MGR_ID in [s["name"] for s in c.json("mgr", "dump")["standbys"]], 60,
               f"the container's mgr to stand by: {mgr_log()}")
    # vstart's mgr, loaded from the checkout, stopped: the container's takes over
    pid = int(c.host_path(CLUSTER_DIR / "run" / "mgr.x.pid").read_text())
    # that pid is this cluster's mgr (vstart.sh's own check: its CEPH_CONF)
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert f"CEPH_CONF={CLUSTER_DIR}/ceph.conf".encode() in environ
    os.kill(pid, signal.SIGTERM)
    c.ceph("mgr", "fail", "x")
    wait_until(lambda: answering(c), 60, f"pg_advisor to answer from the container's mgr: {mgr_log()}")

    # the module is the image's: the container mounts only its ceph.conf, and loads from
    # Ceph's own directory
    mounts = json.loads(podman("inspect", "--format", "{{json .Mounts}}", MGR).stdout)
    assert [m["Destination"] for m in mounts] == ["/etc/ceph"]
    asok = json.loads(podman("exec", MGR, "ceph", "--admin-daemon", f"/run/ceph/mgr.{MGR_ID}.asok",
                             "config", "get", "mgr_module_path").stdout)
    assert asok == {"mgr_module_path": "/usr/share/ceph/mgr"}
    assert podman("exec", MGR, "ps", "-o", "user=", "-C", "ceph-mgr").stdout.split() == ["ceph"]
    modules = c.json("mgr", "module", "ls")
    assert "pg_advisor" in modules["enabled_modules"]
    status = c.json("pg-advisor", "status")
    assert [p["name"] for p in status["pools"] if p["name"] == "rbd"] == ["rbd"]
    assert c.json("mgr", "services").get("pg_advisor") == "http://127.0.0.1:9285/"
    code, page = panel("/")
    assert code == 200 and b"pg_advisor" in page, page[:300]
    code, body = panel("/api/status")
    assert code == 200 and json.loads(body)["osds"], body[:300]

    # state: upmap items of a balance round, options, and a plan that stays open (a step,
    # then 1000 s to the next)
    done = c.json("pg-advisor", "balance", "--max-items", "3")
    assert done["applied"] == len(done["items"]) >= 1 and done["failed"] == [], done
    wait_until(lambda: {u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]} == set(done["items"]),
               30, "the round's items in the OSDMap")
    c.wait_clean()
    c.ceph("config", "set", "mgr", OPT + "step_interval", "1000")
    c.ceph("config", "set", "mgr", OPT + "target_pgs_per_osd", "150")
    started = c.json("pg-advisor", "apply", "--pool", "rbd", "--pg-num", "64")["plan"]
    wait_until(lambda: plan(c).get("next", 0) >= 1, 60, "the plan's first step")
    before, running = stored(c), plan(c)
    assert running["id"] == started and running["status"] == "running"
    assert before["options"] == {OPT + "step_interval": "1000", OPT + "target_pgs_per_osd": "150"}
    assert any(k.startswith(OPT + "exec_state") for k in before["kv"]), sorted(before["kv"])
    assert before["upmaps"] and before["pools"]["rbd"] != (32, 32), before
    history = c.json("pg-advisor", "history")["history"]
    assert any(h["plan"] == started and h["event"] == "issue" for h in history)

    # disabled: no command, nothing stored lost; enabled again: the same plan, where it was
    c.ceph("mgr", "module", "disable", "pg_advisor")
    wait_until(lambda: active(c) and c.run("pg-advisor", "status")[0] != 0, 60, "the module to be off")
    assert stored(c) == before
    c.ceph("mgr", "module", "enable", "pg_advisor")
    wait_until(lambda: answering(c), 60, f"the module to be back: {mgr_log()}")
    again = plan(c)
    assert (again["id"], again["status"], again["next"]) == (started, "running", running["next"])
    assert c.json("pg-advisor", "history")["history"][:len(history)] == history
    c.ceph("pg-advisor", "pause")
    paused = stored(c)
    assert paused["options"] == before["options"] and paused["pools"] == before["pools"]

    # Ceph's image without the module (an upgrade that forgot to rebuild the recipe): the
    # mgr runs, the module stays enabled in the MgrMap, its commands are gone, its state kept
    stop_mgr()
    redeploy_mgr(c, BASE, conf)
    wait_until(lambda: active(c), 60, f"the module-less mgr to be active: {mgr_log()}")
    code, _, err = c.run("pg-advisor", "status")
    # EINVAL: "no valid command found" (or, while the mgr's command list is not yet
    # published, "No handler found for 'pg-advisor status'")
    assert code == errno.EINVAL and ("no valid command" in err or "No handler found" in err), err
    assert "pg_advisor" in c.json("mgr", "module", "ls")["enabled_modules"]
    assert "pg_advisor" not in c.json("mgr", "services")
    assert stored(c) == paused

    # a new image (the recipe rebuilt on a new Ceph image): the plan, paused, where it was
    stop_mgr()
    assert images[NEXT_IMAGE] != images[IMAGE]
    redeploy_mgr(c, NEXT_IMAGE, conf)
    wait_until(lambda: answering(c), 60, f"pg_advisor on the new image: {mgr_log()}")
    resumed = plan(c)
    assert (resumed["id"], resumed["status"], resumed["next"]) == (started, "paused", running["next"])
    assert c.json("pg-advisor", "history")["history"][:len(history)] == history
    assert stored(c) == paused
    assert panel("/")[0] == 200

    # the bind-mount way: Ceph's plain image, the module installed on the host as the spec's
    # comment says (CMake, its prefix here a test directory) and mounted with the argument
    # cephadm takes from the spec (parsed by the host's ceph.deployment)
    prefix = tmp_path / "usr-local"
    build_dir = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build_dir), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--install", str(build_dir)], check=True, capture_output=True)
    [arg] = container_args(parsed(load(SPEC)))
    assert SPEC_SOURCE in arg
    stop_mgr()
    installed = prefix / "share" / "ceph" / "mgr" / "pg_advisor"
    redeploy_mgr(c, BASE, conf, [arg.replace(SPEC_SOURCE, str(installed))])
    wait_until(lambda: answering(c), 60, f"pg_advisor bind-mounted into Ceph's image: {mgr_log()}")
    mounts = json.loads(podman("inspect", "--format", "{{json .Mounts}}", MGR).stdout)
    assert [m["RW"] for m in mounts if m["Destination"] == MODULE_DIR] == [False], mounts
    assert plan(c)["status"] == "paused" and stored(c) == paused
    c.ceph("pg-advisor", "abort")
