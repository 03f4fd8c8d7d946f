"""Where a node is in its boot, from its own records: the latest boot-phase line the node's
CloudWatch agent sent to the job log group (stream `boot-phases/<Auto Scaling group>/<instance
id>`, written by gpucloud.node.boot_phases), read with one GetLogEvents per instance. `gpucloud connect --start`
and `gpucloud logs` add it to each instance's lifecycle state:
`pull server (2m10s so far), after boot 2m58s, agent 41s, mount 12s, gate 55s`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from gpucloud.naming import boot_phase_log_stream

PHASE_ORDER = ("boot", "agent", "mount", "gate", "preload", "pull", "weights", "healthy")
"""The node's phases in boot order (gpucloud.node.boot_phases.PHASES)."""


def latest_line(logs, log_group: str, autoscaling_group: str, instance_id: str) -> dict[str, Any] | None:
    """The node's latest boot-phase line, or None where it has sent none yet (no stream). The newest
    event comes last when the read starts from the tail (CloudWatch Logs API reference, GetLogEvents,
    `startFromHead`, read 2026-11-28)."""
    from botocore.exceptions import ClientError

    try:
        events = logs.get_log_events(logGroupName=log_group, logStreamName=boot_phase_log_stream(autoscaling_group, instance_id),
                                     startFromHead=False, limit=1)["events"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise
    for event in reversed(events):
        try:
            return json.loads(event["message"])
        except ValueError:
            continue
    return None


def duration(seconds: float) -> str:
    """`41s`, `2m58s`, `1h05m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _name(key: str) -> str:
    phase, _, container = key.partition(":")
    return f"{phase} {container}" if container else phase


def _order(key: str) -> tuple[int, str]:
    phase = key.partition(":")[0]
    return (PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER), key)


def where_it_is(line: Mapping[str, Any], now: float) -> str:
    """The phases running, each with its time so far, then those done, in boot order, each with its
    time; with nothing running, the last phase done and how long ago it ended."""
    done: Mapping[str, Mapping[str, float]] = line.get("done") or {}
    running: Mapping[str, float] = line.get("running") or {}
    spans = ", ".join(f"{_name(key)} {duration(done[key]['end'] - done[key]['start'])}" for key in sorted(done, key=_order))
    if running:
        so_far = ", ".join(f"{_name(key)} ({duration(now - running[key])} so far)" for key in sorted(running, key=_order))
        return so_far + (f", after {spans}" if spans else "")
    if not done:
        return "no boot phase recorded yet"
    last = max(done, key=lambda key: done[key]["end"])
    return f"{_name(last)} ended {duration(now - done[last]['end'])} ago, after {spans}"


def phase_reader(logs, log_group: str, autoscaling_group: str,
                 clock: Callable[[], float] | None = None) -> Callable[[str], str | None]:
    """instance id (of the Auto Scaling group) -> where its boot is, or None where it has sent no
    line (or the reader may not read it)."""
    from botocore.exceptions import ClientError

    def read(instance_id: str) -> str | None:
        try:
            line = latest_line(logs, log_group, autoscaling_group, instance_id)
        except ClientError:
            return None
        return where_it_is(line, (clock or time.time)()) if line else None

    return read
