"""`watch`: every interval, read the GPUs and the kernel log, export the readings, and have the
node replaced on a node fault (behind the breaker). Only the standard library and boto3.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.config import NodeConfig
from gpucloud.node.exporter import WATCH_FIELDS, bus_key, render_textfile, write_textfile
from gpucloud.node.faults import ThrottleMemory, evaluate_watch, node_faults
from gpucloud.node.kernel_log import KernelLogFollower, xid_events, xid_table
from gpucloud.node.nvidia_smi import parse_gpu_query, query_argv
from gpucloud.node.replace import report_throttling, replace_node

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatchSettings:
    interval_s: float = 60.0
    throttle_minutes: float = 10.0
    max_replacements_per_hour: int = 2
    replace: bool = True
    """False: node faults are reported and counted, and the node is never marked Unhealthy."""
    kernel_log: Path = Path("/var/log/kern.log")
    state_dir: Path = Path("/var/lib/gpucloud")
    textfile: Path = Path("/var/lib/node_exporter/textfile_collector/gpucloud.prom")


@dataclass
class WatchState:
    xid_counts: dict[tuple[str, int, str], int] = field(default_factory=dict)
    last_xid: dict[str, int] = field(default_factory=dict)
    throttling: ThrottleMemory = field(default_factory=ThrottleMemory)
    outcome: str | None = None
    """'replaced' or 'held' once a node fault was acted on; the watch then stops acting."""


def watch(
    config: NodeConfig,
    settings: WatchSettings,
    instance_id: str,
    region: str,
    node_labels: dict[str, str],
    run: CommandRunner,
    client_factory: Callable[[str, str], Any],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    max_intervals: int | None = None,
) -> WatchState:
    """Watch until the node is replaced (or `max_intervals`, for tests)."""
    follower = KernelLogFollower(settings.kernel_log, settings.state_dir / "kernel-log.json")
    table = xid_table()
    state = WatchState()
    intervals = 0
    while max_intervals is None or intervals < max_intervals:
        intervals += 1
        result = run(query_argv(config.nvidia_smi, WATCH_FIELDS), config.command_timeout_s)
        gpus, stray = parse_gpu_query(result.stdout if result.returncode == 0 else result.stdout + result.stderr,
                                      WATCH_FIELDS)
        if result.returncode != 0 and not stray:
            stray = [f"nvidia-smi exited {result.returncode}"]
        events = xid_events(follower.poll(), table)
        for event in events:
            key = (bus_key(event.pci_bus_id), event.xid, event.kind)
            state.xid_counts[key] = state.xid_counts.get(key, 0) + 1
            state.last_xid[bus_key(event.pci_bus_id)] = event.xid
        findings = evaluate_watch(gpus, stray, events, config.expected_gpu_count, settings.throttle_minutes,
                                  state.throttling, clock())
        for finding in findings:
            log.warning("%s on %s: %s", finding.kind, finding.gpu or "the node", finding.reason)
        throttled = sum(1 for finding in findings if finding.kind == "throttling")
        if throttled:
            report_throttling(client_factory, region, config.group_name, throttled)
        faults = node_faults(findings)
        if faults and state.outcome is None:
            if settings.replace:
                state.outcome = replace_node(config, instance_id, region, config.group_name, faults,
                                             settings.max_replacements_per_hour, client_factory, run)
            else:
                state.outcome = "reported"
                log.error("node fault, and health.replace is off: the node stays in service")
        write_textfile(settings.textfile, render_textfile(
            gpus, state.xid_counts, state.last_xid, node_labels, config.expected_gpu_count,
            {state.outcome: 1} if state.outcome else {},
        ))
        if state.outcome == "replaced":
            return state
        sleep(settings.interval_s)
    return state
