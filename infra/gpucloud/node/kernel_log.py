"""NVIDIA Xid events from the kernel log, each reported once: across log rotation and agent restarts.

The default AMI (Ubuntu, rsyslog) writes kernel messages to /var/log/kern.log and rotates it to
kern.log.1. The follower keeps the file's inode and the offset it has read to in a state file; on
each poll it reads what was added, finishing the rotated file first when the inode changed, and
starting over when the file was truncated in place. Only the standard library is used: this runs
on the node.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

XID_CATALOG = Path(__file__).with_name("xid_catalog.json")
_XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),?\s*(?P<message>.*)$")


@dataclass(frozen=True)
class XidEvent:
    pci_bus_id: str
    xid: int
    message: str
    kind: str
    """node-fault, application or transient (xid_catalog.json)."""
    nvidia_action: str


def xid_table(path: Path = XID_CATALOG) -> dict[int, dict[str, str]]:
    return {int(xid): row for xid, row in json.loads(path.read_text(encoding="utf-8"))["xids"].items()}


def xid_events(lines: list[str], table: dict[int, dict[str, str]]) -> list[XidEvent]:
    """The Xid events among kernel log lines, classified; an Xid the table lacks is transient."""
    events = []
    for line in lines:
        match = _XID_LINE.search(line)
        if not match:
            continue
        xid = int(match["xid"])
        row = table.get(xid, {})
        events.append(XidEvent(
            pci_bus_id=match["pci"].lower(),
            xid=xid,
            message=match["message"].strip(),
            kind=row.get("kind", "transient"),
            nvidia_action=row.get("nvidiaAction", "not in the catalog"),
        ))
    return events


class KernelLogFollower:
    """New lines of a rotating log file since the last poll, the position kept in `state_path`."""

    def __init__(self, path: Path, state_path: Path):
        self.path = Path(path)
        self.rotated = self.path.with_name(self.path.name + ".1")
        self.state_path = Path(state_path)

    def _state(self) -> dict[str, int]:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}

    def _save(self, inode: int, offset: int) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"inode": inode, "offset": offset}), encoding="utf-8")
        os.replace(temporary, self.state_path)

    @staticmethod
    def _read_from(path: Path, offset: int) -> tuple[list[str], int]:
        """Whole lines from `offset`; a last line without its newline is left for the next poll."""
        with path.open("rb") as log:
            log.seek(offset)
            data = log.read()
        complete = data[: data.rfind(b"\n") + 1]
        return complete.decode("utf-8", errors="replace").splitlines(), offset + len(complete)

    def poll(self) -> list[str]:
        """Lines added since the last poll. The first poll of a node starts at the current end:
        what the log held before the agent watched (the boot, an earlier node) is not news."""
        try:
            current = self.path.stat()
        except FileNotFoundError:
            return []
        state = self._state()
        if not state:
            self._save(current.st_ino, current.st_size)
            return []
        lines: list[str] = []
        offset = state.get("offset", 0)
        if state.get("inode") != current.st_ino:
            try:
                if self.rotated.stat().st_ino == state.get("inode"):
                    lines += self._read_from(self.rotated, offset)[0]
            except FileNotFoundError:
                pass
            offset = 0
        elif current.st_size < offset:
            offset = 0
        new_lines, offset = self._read_from(self.path, offset)
        self._save(current.st_ino, offset)
        return lines + new_lines
