"""What one watch interval found, sorted by what it means for the node.

- node-fault: the node cannot serve GPU work until replaced (a GPU missing from the count or
  unreadable, a failed row remap, an Xid NVIDIA answers with a GPU reset or a machine restart);
- throttling: thermal or power slowdown sustained past `health.throttleMinutes`: reported and
  alarmed, never replaced (the cause is usually cooling or a power cap, not the node);
- transient: logged and counted (a pending row remap, an Xid NVIDIA says to ignore);
- application: the job's own fault (Xid 13, 31, 43, 94...): never held against the node.

Pure functions over readings and kernel log events; only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpucloud.node.kernel_log import XidEvent
from gpucloud.node.nvidia_smi import GpuRecord

THROTTLE_FIELDS = (
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
)
"""Slowdowns that mean the GPU cannot run at speed (heat, or the board's power brake); the
software power cap a user sets is left out. Names as driver 580 answers them (recorded on an H100,
tests/fixtures/nvidia_smi/h100-watch/throttle-fields.txt)."""


@dataclass(frozen=True)
class Finding:
    kind: str
    gpu: str
    reason: str


@dataclass
class ThrottleMemory:
    """Since when each GPU (by bus id) has been throttled, kept between intervals."""

    since: dict[str, float] = field(default_factory=dict)


def evaluate_watch(
    gpus: Sequence[GpuRecord],
    stray_lines: Sequence[str],
    events: Sequence[XidEvent],
    expected_gpu_count: int | None,
    throttle_minutes: float,
    memory: ThrottleMemory,
    now: float,
) -> list[Finding]:
    findings = [Finding("node-fault", "", f"nvidia-smi could not read the GPUs: {line.strip()}")
                for line in stray_lines if line.strip()]
    if expected_gpu_count is not None and len(gpus) < expected_gpu_count:
        findings.append(Finding("node-fault", "", f"{len(gpus)} of {expected_gpu_count} GPUs answer"))
    for gpu in gpus:
        label = gpu.label
        if gpu.value("remapped_rows.failure").strip().lower() == "yes":
            findings.append(Finding("node-fault", label, "row remapping failed: the GPU has memory it cannot repair"))
        if gpu.value("remapped_rows.pending").strip().lower() == "yes":
            findings.append(Finding("transient", label, "rows are waiting to be remapped (a GPU reset applies them)"))
        findings += _throttling(gpu, throttle_minutes, memory, now)
    for event in events:
        findings.append(Finding(
            event.kind, event.pci_bus_id,
            f"Xid {event.xid} ({event.nvidia_action} in NVIDIA's catalog): {event.message}",
        ))
    return findings


def _throttling(gpu: GpuRecord, throttle_minutes: float, memory: ThrottleMemory, now: float) -> list[Finding]:
    bus = gpu.value("pci.bus_id")
    active = [name.rsplit(".", 1)[1] for name in THROTTLE_FIELDS if gpu.value(name).strip().lower() == "active"]
    if not active:
        memory.since.pop(bus, None)
        return []
    since = memory.since.setdefault(bus, now)
    minutes = (now - since) / 60
    if minutes < throttle_minutes:
        return []
    return [Finding("throttling", gpu.label, f"{', '.join(active)} for {minutes:.0f} minutes")]


def node_faults(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that call for replacing the node."""
    return [finding for finding in findings if finding.kind == "node-fault"]


def summary(findings: Sequence[Finding]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return counts
