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


READ_LINES = 10
"""How many of a stream's last events are read: the latest line is picked from them by its own
content, as a node can write several lines within one timestamp."""


def _lines(events) -> list[dict[str, Any]]:
    found = []
    for event in events:
        try:
            found.append(json.loads(event["message"]))
        except ValueError:
            continue
    return found


def _latest(lines: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The line written last: the latest `at`; at one time, the one that knows more phases done,
    then more running (a phase ended, or another started, after the line before)."""
    return max(lines, key=lambda line: (line.get("at", 0), len(line.get("done") or {}), len(line.get("running") or {})),
               default=None)


def latest_line(logs, log_group: str, autoscaling_group: str, instance_id: str) -> dict[str, Any] | None:
    """The node's latest boot-phase line, or None where it has sent none yet (no stream): one
    GetLogEvents of the stream's last events (from the tail: CloudWatch Logs API reference,
    GetLogEvents, `startFromHead`, read 2026-11-28)."""
    from botocore.exceptions import ClientError

    try:
        events = logs.get_log_events(logGroupName=log_group, logStreamName=boot_phase_log_stream(autoscaling_group, instance_id),
                                     startFromHead=False, limit=READ_LINES)["events"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise
    return _latest(_lines(events))


def latest_lines(logs, log_group: str, autoscaling_group: str) -> dict[str, dict[str, Any]]:
    """Instance id -> latest line, for every node of the group at once: FilterLogEvents over the
    group's streams (`logStreamNamePrefix`), which reads on the log group, not a stream (a holder of
    the whole job log group, the job runner, needs no stream of a named group)."""
    from botocore.exceptions import ClientError

    prefix = boot_phase_log_stream(autoscaling_group, "")
    request: dict[str, Any] = {"logGroupName": log_group, "logStreamNamePrefix": prefix}
    found: dict[str, list[dict[str, Any]]] = {}
    try:
        while True:
            page = logs.filter_log_events(**request)
            for event in page.get("events", []):
                if event["logStreamName"].startswith(prefix):
                    found.setdefault(event["logStreamName"][len(prefix):], []).extend(_lines([event]))
            if not page.get("nextToken") or page["nextToken"] == request.get("nextToken"):
                break
            request["nextToken"] = page["nextToken"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return {}
        raise
    return {instance: latest for instance, lines in found.items() if (latest := _latest(lines))}


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


def phase_reader(logs, log_group: str, autoscaling_group: str, clock: Callable[[], float] | None = None,
                 whole_group: bool = False) -> Callable[[str], str | None]:
    """instance id (of the Auto Scaling group) -> where its boot is, or None where it has sent no
    line (or the reader may not read it). One GetLogEvents per instance (a notebook user may read
    its group's streams only), or with `whole_group` one FilterLogEvents scan for all (`gpucloud logs`)."""
    from botocore.exceptions import ClientError

    everyone: dict[str, dict[str, Any]] | None = None

    def read(instance_id: str) -> str | None:
        nonlocal everyone
        try:
            if whole_group:
                everyone = latest_lines(logs, log_group, autoscaling_group) if everyone is None else everyone
                line = everyone.get(instance_id)
            else:
                line = latest_line(logs, log_group, autoscaling_group, instance_id)
        except ClientError:
            return None
        return where_it_is(line, (clock or time.time)()) if line else None

    return read
