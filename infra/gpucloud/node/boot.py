"""`boot`: install what the agent bundle carries (the launcher, scripts and systemd units its
manifest lists) and run its start-up steps, in order.

The bootstrap stub runs it once, right after unpacking a bundle whose SHA-256 it checked. Every
step runs even when one before it failed, as cloud-init's runcmd did: a failed disk set-up must
still let the gate start, find the mount missing and ABANDON the launch.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from gpucloud.node import boot_phases
from gpucloud.node.commands import CommandRunner

MANIFEST_MEMBER = "boot/manifest.json"
ROOT_ENV = "GPUCLOUD_ROOT"
STEP_TIMEOUT_S = 3 * 3600
"""A backstop only: systemd holds each unit to its own TimeoutStartSec."""
MOUNT_UNIT = "gpucloud-storage.service"
"""userdata.layout.STORAGE_UNIT (a test holds them equal): the step that starts it is the mount phase."""

log = logging.getLogger(__name__)


def bundle_dir() -> Path:
    """The directory the bundle was unpacked into: the one holding the `gpucloud` package."""
    return Path(__file__).resolve().parents[2]


def install_files(manifest: dict, source: Path, root: Path) -> list[Path]:
    """Each file written beside its target and renamed over it, with the manifest's mode."""
    written = []
    for item in manifest["files"]:
        target = root / item["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.gpucloud")
        temporary.write_bytes((source / item["member"]).read_bytes())
        os.chmod(temporary, int(item["mode"], 8))
        os.replace(temporary, target)
        written.append(target)
    return written


def boot(run: CommandRunner, source: Path | None = None, root: Path | None = None,
         clock: Callable[[], float] = time.time) -> int:
    """0 when every file was installed and every step succeeded, else 1 (after trying them all).
    Records the boot, agent and mount phases (`boot_phases`)."""
    started = clock()
    booted = boot_phases.kernel_start()
    if booted is not None:
        boot_phases.note("boot", booted, started)
    boot_phases.begin("agent", started)
    source = source or bundle_dir()
    root = root or Path(os.environ.get(ROOT_ENV, "/"))
    manifest = json.loads((source / MANIFEST_MEMBER).read_text(encoding="utf-8"))
    for path in install_files(manifest, source, root):
        log.info("installed %s", path)
    failed = 0
    for argv in manifest["steps"]:
        mount = MOUNT_UNIT in argv
        if mount:
            boot_phases.note("agent", started, clock())
        step_started = clock()
        if mount:
            boot_phases.begin("mount", step_started)
        result = run(argv, STEP_TIMEOUT_S)
        if mount:
            boot_phases.note("mount", step_started, clock())
        if result.ok:
            log.info("%s: done", " ".join(argv))
        else:
            failed += 1
            log.error("%s: %s", " ".join(argv), result.describe_failure(STEP_TIMEOUT_S))
    return 1 if failed else 0
