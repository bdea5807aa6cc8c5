"""The Ceph a benchmark ran against, for the first line of its output."""
import json
import subprocess
from typing import Dict, Optional


def ceph_version(env: Optional[Dict[str, str]] = None, conf: Optional[str] = None) -> str:
    """'ceph version 20.2.4 (...) tentacle (stable ...)' and where it came from: with `env` (a
    cluster's) or `conf`, `ceph versions`' mon and mgr; else, or unanswered, the installed `ceph`."""
    try:
        if env is not None or conf is not None:
            p = subprocess.run(["ceph", *(["-c", conf] if conf else []), "versions", "-f", "json",
                                "--connect-timeout", "20"], env=env, capture_output=True, text=True,
                               timeout=60)
            if p.returncode == 0:
                mon, mgr = (" / ".join(json.loads(p.stdout).get(d, {})) for d in ("mon", "mgr"))
                return f"{mon} (the running mon's `ceph versions`" + \
                    (f"; mgr {mgr})" if mgr and mgr != mon else ")")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    try:
        p = subprocess.run(["ceph", "--version"], capture_output=True, text=True, timeout=60)
        return f"{p.stdout.strip()} (`ceph --version`)"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({type(e).__name__}: {e})"


def print_ceph_version(env: Optional[Dict[str, str]] = None, conf: Optional[str] = None) -> str:
    """Print the line `# Ceph: ...` (flushed, before any table) and return the version."""
    print(f"# Ceph: {(v := ceph_version(env, conf))}", flush=True)
    return v
