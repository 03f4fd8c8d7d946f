"""The node agent bundle: what the bootstrap stub fetches from S3 and unpacks on every node.

A zip, not a wheel: the node's own Python imports the unpacked tree as it is, with no installer
(Ubuntu 22.04's image has no pip for its system Python, and installing into it would fight apt).
It holds the `gpucloud.node` package (source and data files, as in the repository), and a boot
manifest: the scripts and systemd units to install and the steps that start them, run by
`gpucloud-node boot`. The bytes are reproducible (sorted members, fixed timestamps and modes), so
the same package gives the same SHA-256 and the same content-addressed key, and a change to any of
it changes the launch templates' pinned hash, which rolls the fleet through the instance refresh.
Members are stored, not deflated: compressed bytes depend on the zlib build of the machine running
`pulumi up`, and a hash that changed with the deployer would roll the fleet for nothing.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from importlib import resources

from gpucloud.naming import AGENT_BUNDLE_PREFIX
from gpucloud.userdata.layout import (
    AGENT_COMMAND_PATH,
    BOOT_MANIFEST_MEMBER,
    CLOUDWATCH_UNIT,
    COLLECT_UNIT,
    DRAIN_UNIT,
    GATE_UNIT,
    HEARTBEAT_UNIT,
    SERVICES_UNIT,
    STORAGE_UNIT,
    TUNE_UNIT,
    WATCH_UNIT,
)
from gpucloud.userdata.scripts import SCRIPTS, UNITS

PACKAGE_INIT = '"""gpu-cloud: the node agent, as the agent bundle carries it."""\n'
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)

BOOT_STEPS: tuple[tuple[str, ...], ...] = (
    ("systemctl", "daemon-reload"),
    ("systemctl", "enable", TUNE_UNIT, STORAGE_UNIT, DRAIN_UNIT, GATE_UNIT, WATCH_UNIT, COLLECT_UNIT, SERVICES_UNIT),
    ("systemd-run", f"--unit={HEARTBEAT_UNIT}", AGENT_COMMAND_PATH, "heartbeat"),
    ("systemctl", "start", TUNE_UNIT, STORAGE_UNIT),
    ("systemctl", "start", CLOUDWATCH_UNIT),
    ("systemctl", "start", "--no-block", DRAIN_UNIT, GATE_UNIT, WATCH_UNIT, COLLECT_UNIT, SERVICES_UNIT),
)
"""In order, each run whether the one before failed (as cloud-init's runcmd did): the heartbeat
keeps the launch action pending while tuning, disks and metrics are set up; the gate starts last,
since once it completes the launch hook the node takes work; the watch starts after the gate has
passed (its unit requires the gate), never on a node the gate refused, and so does the collector
(which exits at once on a stack without a Prometheus workspace), and so does the services unit,
which starts what the group serves (JupyterLab, TensorBoard, containers) and nothing elsewhere."""


@dataclass(frozen=True)
class AgentBundle:
    data: bytes
    sha256: str

    @property
    def key(self) -> str:
        """Content-addressed: a new bundle is a new object, never an overwrite of one in use."""
        return f"{AGENT_BUNDLE_PREFIX}gpucloud-node-{self.sha256}.zip"


def node_units() -> dict[str, str]:
    """The units of the services the agent starts (JupyterLab, TensorBoard, containers, and the
    unit that starts them), which ship beside their modules in gpucloud/node as `*.service`."""
    package = resources.files("gpucloud.node")
    return {entry.name: entry.read_text(encoding="utf-8") for entry in package.iterdir()
            if entry.is_file() and entry.name.endswith(".service")}


def all_units() -> dict[str, str]:
    return {**UNITS, **node_units()}


def boot_manifest() -> dict:
    """What `gpucloud-node boot` installs (path, member, mode) and runs."""
    files = [
        {"path": path, "member": _file_member(path), "mode": "0755"} for path in sorted(SCRIPTS)
    ] + [
        {"path": f"/etc/systemd/system/{unit}", "member": _file_member(f"/etc/systemd/system/{unit}"), "mode": "0644"}
        for unit in sorted(all_units())
    ]
    return {"files": files, "steps": [list(step) for step in BOOT_STEPS]}


def _file_member(path: str) -> str:
    return "boot/files" + path


@functools.lru_cache(maxsize=1)
def build_agent_bundle() -> AgentBundle:
    """The bundle of the installed package (built once per process)."""
    members: dict[str, bytes] = {"gpucloud/__init__.py": PACKAGE_INIT.encode("utf-8")}
    package = resources.files("gpucloud.node")
    for entry in package.iterdir():
        if entry.is_file() and entry.name.endswith((".py", ".json")):
            members[f"gpucloud/node/{entry.name}"] = entry.read_bytes()
    manifest = boot_manifest()
    texts = {**SCRIPTS, **{f"/etc/systemd/system/{unit}": text for unit, text in all_units().items()}}
    for item in manifest["files"]:
        members[item["member"]] = texts[item["path"]].encode("utf-8")
    members[BOOT_MANIFEST_MEMBER] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            archive.writestr(info, members[name])
    data = buffer.getvalue()
    return AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest())
