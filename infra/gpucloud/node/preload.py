"""`preload`: load the content of chosen Lustre directories (`storage.lustre.preloadPrefixes`) into
the file system once, so no first read waits on S3.

Each linked prefix's metadata is already on the file system: its data repository association is
created with BatchImportMetaDataOnCreate, which runs an import task
(IMPORT_METADATA_FROM_REPOSITORY) when the association is made (FSx API reference,
CreateDataRepositoryAssociation and CreateDataRepositoryTask, read 2026-11-28). The content is
copied from S3 at a file's first read, unless it is restored ahead: `lfs hsm_restore <file>`
queues that copy ("Preloading files into your file system", FSx for Lustre user guide, read
2026-11-28, restores each file found under the directory). One node does it: the first to create
the lock directory on the file system itself (mkdir is atomic there, as on any POSIX file system);
it writes a marker when done, and the others leave it alone. Progress is a reading.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from gpucloud.node import boot_phases
from gpucloud.node.commands import CommandRunner
from gpucloud.node.exporter import write_textfile

STATE_DIR = "/fsx/.gpucloud"
TEXTFILE = Path("/var/lib/node_exporter/textfile_collector/gpucloud_fsx_preload.prom")
BATCH = 64
RESTORE_TIMEOUT_S = 600
STALE_LOCK_S = 6 * 3600
"""A lock older than this was left by a node that went away mid-preload: another takes over."""

log = logging.getLogger("gpucloud.node.preload")


def readings(requested: int, total: int, requested_bytes: int, total_bytes: int) -> str:
    return "\n".join([
        "# HELP gpucloud_fsx_preload_files Files of the preload directories: total, and restores requested so far.",
        "# TYPE gpucloud_fsx_preload_files gauge",
        f'gpucloud_fsx_preload_files{{state="total"}} {total}',
        f'gpucloud_fsx_preload_files{{state="requested"}} {requested}',
        "# HELP gpucloud_fsx_preload_bytes Bytes of the preload directories: total, and restores requested so far.",
        "# TYPE gpucloud_fsx_preload_bytes gauge",
        f'gpucloud_fsx_preload_bytes{{state="total"}} {total_bytes}',
        f'gpucloud_fsx_preload_bytes{{state="requested"}} {requested_bytes}',
    ]) + "\n"


def _files(directories: Sequence[str]) -> list[tuple[str, int]]:
    found = []
    for directory in directories:
        for root, _, names in os.walk(directory):
            for name in sorted(names):
                path = os.path.join(root, name)
                found.append((path, os.lstat(path).st_size))
    return found


def _take_lock(lock: Path, clock=time.time) -> bool:
    try:
        lock.mkdir()
        return True
    except FileExistsError:
        if clock() - lock.stat().st_mtime < STALE_LOCK_S:
            return False
        log.warning("taking over a preload lock left %s ago", f"{clock() - lock.stat().st_mtime:.0f} s")
        shutil.rmtree(lock, ignore_errors=True)
        return _take_lock(lock, clock)


def preload(directories: Sequence[str], run: CommandRunner, state_dir: str = STATE_DIR, textfile: Path = TEXTFILE) -> int:
    """Restore every file under the directories, once for the file system; 0 when done (here or
    by another node), 1 when a restore request failed."""
    state = Path(state_dir)
    state.mkdir(parents=True, exist_ok=True)
    done = state / "preload.done"
    if done.is_file() and json.loads(done.read_text() or "{}").get("directories") == list(directories):
        log.info("preload of %s already done", ", ".join(directories))
        return 0
    lock = state / "preload.lock"
    if not _take_lock(lock):
        log.info("another node preloads %s", ", ".join(directories))
        return 0
    started = time.time()
    boot_phases.begin("preload", started)
    try:
        files = _files(directories)
        total_bytes = sum(size for _, size in files)
        requested = requested_bytes = failed = 0
        write_textfile(textfile, readings(0, len(files), 0, total_bytes))
        for index in range(0, len(files), BATCH):
            batch = files[index:index + BATCH]
            result = run(["lfs", "hsm_restore", *(path for path, _ in batch)], RESTORE_TIMEOUT_S)
            if not result.ok:
                failed += 1
                log.error("lfs hsm_restore: %s", result.describe_failure(RESTORE_TIMEOUT_S))
                continue
            requested += len(batch)
            requested_bytes += sum(size for _, size in batch)
            write_textfile(textfile, readings(requested, len(files), requested_bytes, total_bytes))
        if not failed:
            done.write_text(json.dumps({"directories": list(directories), "files": len(files), "bytes": total_bytes}))
        log.info("preload requested %d of %d files (%d bytes)", requested, len(files), requested_bytes)
        return 1 if failed else 0
    finally:
        shutil.rmtree(lock, ignore_errors=True)
        boot_phases.note("preload", started, time.time())
