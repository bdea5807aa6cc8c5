"""The binary CRUSH map for a read (model/crush_binary.py): what Ceph stored in tree and
straw (v1) buckets, which the mgr's `osd_map_crush` does not show (a device-class shadow
tree's node weights, straws of an older straw_calc_version).

Asked of the mon (`osd getcrushmap`) through the module's librados handle, as the mgr's own
mon_command hands its output back as text; only for a map that holds such buckets, and once
per CRUSH map (the OSDMap's crush_version, which every CRUSH change raises): a cluster of
straw2 buckets never asks, an unchanged map asks once.
"""
import json
from typing import Any, Callable, Dict, Optional, Tuple

from mgr_module import MgrModule

from ..model import mon_commands
from ..model.crush_binary import decode_buckets, needs_binary
from ..model.errors import AdvisorError

MON_TIMEOUT = 30        # seconds `osd getcrushmap` may take before the read goes on without it
RETRY_AFTER = 60.0      # seconds between reads that ask again while the mon gave no map


def getcrushmap(mgr: MgrModule) -> bytes:
    """The mon's binary CRUSH map now. Raises on any failure."""
    code, out, err = mgr.rados.mon_command(json.dumps(mon_commands.getcrushmap()), b"",
                                           timeout=MON_TIMEOUT)
    if code != 0:
        raise AdvisorError(code, f"osd getcrushmap: {err}")
    return bytes(out)


class CrushBinary:
    """The binary map of the CRUSH map a read holds, asked only when it is needed and new."""

    def __init__(self, ask: Callable[[], bytes], warn: Callable[[str], None]) -> None:
        self.ask = ask
        self.warn = warn
        self.asked = 0                                          # mon round trips, for tests
        self._kept: Optional[Tuple[Any, bytes]] = None          # (crush_version, the map)
        self.failing = False                                    # the last ask gave no map

    def retry_key(self, now: float) -> int:
        """Part of the read's change key (MgrReader): 0 while the map is had or not needed;
        while the mon gives none, a value that changes every RETRY_AFTER seconds, so that a
        quiet cluster (whose other keys do not change) is read, and the map asked, again."""
        return int(now // RETRY_AFTER) + 1 if self.failing else 0

    def for_maps(self, osd_map: Dict[str, Any], crush: Dict[str, Any]) -> Optional[bytes]:
        """The binary CRUSH map for these documents, or None where the dump is enough or the
        mon gave none that reads (the pools that need it are then set aside, with the
        reason). A map newer than the dump (a change between the two reads) is kept for the
        dump's version and asked again at the next one; buckets it disagrees on are read
        from the dump (snapshot.load, strict=False)."""
        if not needs_binary(crush):
            self._kept, self.failing = None, False
            return None
        version = osd_map.get("crush_version") if isinstance(osd_map, dict) else None
        if version is not None and self._kept is not None and self._kept[0] == version:
            return self._kept[1]
        self.asked += 1
        try:
            data = self.ask()
            decode_buckets(data)        # one that does not read is not kept, not used
        except Exception as e:          # the read goes on from the dump alone
            self.warn(f"pg_advisor: binary CRUSH map unavailable ({e}); pools over tree or straw "
                      f"buckets may be set aside")
            self._kept, self.failing = None, True
            return None
        self._kept = (version, data) if version is not None else None
        self.failing = False
        return data
