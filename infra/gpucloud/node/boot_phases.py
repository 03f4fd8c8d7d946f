"""Each phase of the node's own boot, with its start and end times: as Prometheus readings beside
the watch's (`gpucloud_boot_phases.prom`, which `watch` serves and the collector sends on), in a
small record the readings are made from, and as one log line per phase, so the plan's cold-start
estimate can be checked against what a node really took and an operator can see where it is.

Phases: boot (the kernel's start to the agent's), agent (bundle install and boot steps), mount
(disks and shared tiers), gate (GPU checks and the launch hook), preload (the Lustre content one
node loads), pull, weights and healthy (per container: image pull, weights copy, first healthy
answer). Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from gpucloud.node.exporter import _labels, write_textfile

PHASES = ("boot", "agent", "mount", "gate", "preload", "pull", "weights", "healthy")
RECORD = Path("/var/lib/gpucloud/boot-phases.json")
TEXTFILE = Path("/var/lib/node_exporter/textfile_collector/gpucloud_boot_phases.prom")
DIRECTORY_ENV = "GPUCLOUD_BOOT_PHASES_DIR"
"""Where the record and the readings go instead (the boot-phase benchmark and tests set it)."""
PROC_STAT = Path("/proc/stat")

log = logging.getLogger("gpucloud.node.boot_phases")


def kernel_start(proc_stat: Path = PROC_STAT) -> float | None:
    """When the kernel booted, in seconds since the epoch (`btime` of /proc/stat, proc(5))."""
    try:
        for line in proc_stat.read_text(encoding="ascii").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _key(phase: str, container: str | None) -> str:
    return f"{phase}:{container}" if container else phase


def paths() -> tuple[Path, Path]:
    """The record and the readings' textfile: the node's, or both under $GPUCLOUD_BOOT_PHASES_DIR."""
    directory = os.environ.get(DIRECTORY_ENV)
    if directory:
        return Path(directory) / RECORD.name, Path(directory) / TEXTFILE.name
    return RECORD, TEXTFILE


def record(phase: str, start: float, end: float, container: str | None = None,
           path: Path | None = None, textfile: Path | None = None) -> dict:
    """Add one phase to the record (under a lock: each container's unit writes its own), log it and
    rewrite the readings; returns the whole record."""
    default_path, default_textfile = paths()
    path, textfile = path or default_path, textfile or default_textfile
    if phase not in PHASES:
        raise ValueError(f"{phase!r} is not a boot phase ({', '.join(PHASES)})")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        phases = read(path)
        phases[_key(phase, container)] = {"start": round(start, 3), "end": round(end, 3)}
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(phases, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)
    where = f" ({container})" if container else ""
    log.info("boot phase %s%s: %.1f s, ended %s", phase, where, end - start,
             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end)))
    write_textfile(textfile, render_readings(phases))
    return phases


def read(path: Path | None = None) -> dict:
    path = path or paths()[0]
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def note(phase: str, start: float, end: float, container: str | None = None) -> None:
    """`record`, where a record that cannot be written (a read-only or foreign host) only warns:
    a reading must never stop the boot."""
    try:
        record(phase, start, end, container)
    except OSError as error:
        log.warning("boot phase %s not recorded: %s", phase, error)


@contextlib.contextmanager
def timed(phase: str, container: str | None = None, clock: Callable[[], float] = time.time) -> Iterator[None]:
    """Record the phase around a block, whether or not it raised (a failed pull took its time too)."""
    start = clock()
    try:
        yield
    finally:
        note(phase, start, clock(), container)


def render_readings(phases: Mapping[str, Mapping[str, float]], labels: Mapping[str, str] | None = None) -> str:
    """`gpucloud_boot_phase_seconds` and `gpucloud_boot_phase_end_timestamp_seconds` per phase
    (and container), in boot order."""
    order = {name: index for index, name in enumerate(PHASES)}
    keys = sorted(phases, key=lambda key: (order.get(key.split(":")[0], len(PHASES)), key))
    seconds, ends = [], []
    for key in keys:
        phase, _, container = key.partition(":")
        tags = {**(labels or {}), "phase": phase, **({"container": container} if container else {})}
        span = phases[key]
        seconds.append(f"gpucloud_boot_phase_seconds{_labels(tags)} {span['end'] - span['start']:.3f}")
        ends.append(f"gpucloud_boot_phase_end_timestamp_seconds{_labels(tags)} {span['end']:.3f}")
    return "\n".join([
        "# HELP gpucloud_boot_phase_seconds How long each phase of this node's boot took.",
        "# TYPE gpucloud_boot_phase_seconds gauge", *seconds,
        "# HELP gpucloud_boot_phase_end_timestamp_seconds When each phase of this node's boot ended (Unix time).",
        "# TYPE gpucloud_boot_phase_end_timestamp_seconds gauge", *ends,
    ]) + "\n"


def where_it_is(phases: Mapping[str, Mapping[str, float]]) -> str:
    """The last phase the node finished, in words: `gate done at 12:03:10Z (boot 171 s, agent 40 s, ...)`."""
    if not phases:
        return "no boot phase recorded yet"
    last = max(phases, key=lambda key: phases[key]["end"])
    spans = ", ".join(f"{key} {phases[key]['end'] - phases[key]['start']:.0f} s"
                      for key in sorted(phases, key=lambda key: phases[key]["end"]))
    return f"{last} done at {time.strftime('%H:%M:%SZ', time.gmtime(phases[last]['end']))} ({spans})"
