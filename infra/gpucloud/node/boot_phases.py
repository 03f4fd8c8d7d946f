"""Each phase of the node's own boot, with its start and end times: as Prometheus readings beside
the watch's (`gpucloud_boot_phases.prom`, which `watch` serves and the collector sends on), in a
small record the readings are made from, and as one log line per phase, so the plan's cold-start
estimate can be checked against what a node really took and an operator can see where it is.

Phases: boot (the kernel's start to the agent's), agent (bundle install and boot steps), mount
(disks and shared tiers), gate (GPU checks and the launch hook), preload (the Lustre content one
node loads), pull, weights and healthy (per container: image pull, weights copy, first healthy
answer). Standard library only.

Each phase's start (`begin`) and end (`record`) is also a JSON line in `boot-phases.log`, carrying
the phases done and those still running, which the CloudWatch agent sends to the stack's job log
group (stream `boot-phases/<Auto Scaling group>/<instance id>`, userdata/render.py): the latest
line alone says where the node is, to `gpucloud connect --start` and `gpucloud logs`
(ops/node_phases.py).
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
LOG = Path("/var/log/gpucloud/boot-phases.log")
"""The phase lines the CloudWatch agent sends on (userdata/layout.BOOT_PHASE_LOG_PATH)."""
DIRECTORY_ENV = "GPUCLOUD_BOOT_PHASES_DIR"
"""Where the record, the readings and the log go instead (the boot-phase benchmark and tests set it)."""
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


def log_path() -> Path:
    directory = os.environ.get(DIRECTORY_ENV)
    return Path(directory) / LOG.name if directory else LOG


def _checked(phase: str) -> None:
    if phase not in PHASES:
        raise ValueError(f"{phase!r} is not a boot phase ({', '.join(PHASES)})")


def _write_json(path: Path, document: Mapping) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(document, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def _update(path: Path, key: str, event: str, at: float, span: dict | None) -> dict:
    """Under the record's lock (each container's unit writes its own): set the phase done (`span`)
    or running, then append the line the CloudWatch agent sends on. Returns the phases done."""
    path.parent.mkdir(parents=True, exist_ok=True)
    running_path = path.with_name(f".{path.stem}-running.json")
    with open(path.with_name(f".{path.name}.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        phases, running = read(path), read(running_path)
        if span is None:
            running[key] = round(at, 3)
        else:
            phases[key] = span
            running.pop(key, None)
            _write_json(path, phases)
        _write_json(running_path, running)
        line = {"event": event, "phase": key, "at": round(at, 3), "done": phases, "running": running}
        target = log_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as log_file:
            log_file.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
    return phases


def begin(phase: str, start: float, container: str | None = None, path: Path | None = None) -> None:
    """Say that a phase started, so that a node in a long pull says so before it ends; a line that
    cannot be written only warns (a reading must never stop the boot)."""
    _checked(phase)
    try:
        _update(path or paths()[0], _key(phase, container), "started", start, None)
    except OSError as error:
        log.warning("boot phase %s start not recorded: %s", phase, error)


def record(phase: str, start: float, end: float, container: str | None = None,
           path: Path | None = None, textfile: Path | None = None) -> dict:
    """Add one phase to the record, log it and rewrite the readings; returns the whole record."""
    default_path, default_textfile = paths()
    path, textfile = path or default_path, textfile or default_textfile
    _checked(phase)
    phases = _update(path, _key(phase, container), "ended", end, {"start": round(start, 3), "end": round(end, 3)})
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
    begin(phase, start, container)
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
