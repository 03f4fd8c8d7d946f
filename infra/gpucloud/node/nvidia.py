"""GPU health from `nvidia-smi`: what a healthy node looks like, the checks over what it reports,
and the verdict.

Only `check_gpus` runs commands, through an injected runner, so the same logic is exercised by
recorded outputs in tests and by the real driver on an instance. Reading nvidia-smi's text is
`nvidia_smi`; its names are importable from here as before.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucloud.node.commands import CommandResult, CommandRunner, run_command
from gpucloud.node.nvidia_smi import (
    PERSISTENCE_FIELDS,
    QUERY_FIELDS,
    GpuRecord,
    NvlinkLinks,
    Topology,
    parse_fabric,
    parse_gpu_query,
    parse_int,
    parse_nvlink_status,
    parse_topology,
    query_argv,
)

# Printed where a counter does not apply to the GPU (ECC off, no page retirement on Hopper):
# nothing to check, unlike bracketed errors such as [Unknown Error] or [GPU requires reset].
_NOT_APPLICABLE = frozenset({"", "n/a", "[n/a]", "not supported", "[not supported]"})
_REQUIRES_RESET = "[gpu requires reset]"
_YES = frozenset({"yes", "true", "active", "enabled"})
_NO = frozenset({"no", "false", "inactive", "disabled"})
_VENDOR_WORDS = frozenset({"nvidia", "tesla"})
_INVALID_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')


@dataclass(frozen=True)
class Expectations:
    """What a healthy node of this instance type looks like."""

    gpu_count: int | None = None
    gpu_model: str | None = None
    max_temperature_c: int = 85
    nvlink: bool = False
    fabric: bool = False
    """NVSwitch types: every GPU must have registered with the fabric (fabric manager running)."""
    required_mounts: tuple[str, ...] = ()


@dataclass
class HealthReport:
    """The verdict of one check: healthy exactly when there are no problems. Notes name what
    could not be checked on this driver, without making the node unhealthy."""

    expectations: Expectations
    problems: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpus: tuple[GpuRecord, ...] = ()
    nvlink: NvlinkLinks | None = None
    topology: Topology | None = None
    fabric: dict[str, dict[str, str]] | None = None
    """Per PCI bus id, the State and Status of the NVSwitch fabric registration."""

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        nvlink = None
        if self.nvlink is not None:
            nvlink = {
                str(gpu): {
                    "active": sorted(link for link, up in links.items() if up),
                    "inactive": sorted(link for link, up in links.items() if not up),
                }
                for gpu, links in sorted(self.nvlink.items())
            }
        topology = None
        if self.topology is not None:
            topology = {
                f"GPU{gpu}": {f"GPU{peer}": kind for peer, kind in sorted(peers.items())}
                for gpu, peers in sorted(self.topology.items())
            }
        expected = dataclasses.asdict(self.expectations)
        expected["required_mounts"] = list(self.expectations.required_mounts)
        return {
            "healthy": self.healthy,
            "problems": list(self.problems),
            "actions": list(self.actions),
            "notes": list(self.notes),
            "expected": expected,
            "gpus": [dict(gpu.fields) for gpu in self.gpus],
            "nvlink": nvlink,
            "topology": topology,
            "fabric": self.fabric,
        }


def model_matches(expected: str, actual: str) -> bool:
    """True when every word of the expected model appears in the GPU's name, ignoring case,
    punctuation and vendor words: "H100" and "h100 80gb" both match "NVIDIA H100 80GB HBM3",
    while "L4" does not match "NVIDIA L40S"."""
    wanted = set(_words(expected)) - _VENDOR_WORDS
    have = set(_words(actual))
    return bool(have) and wanted <= have


def evaluate_gpus(
    gpus: Sequence[GpuRecord], stray_lines: Sequence[str], expectations: Expectations
) -> list[str]:
    """Problems with count, model, memory errors and temperature. Persistence mode is left to
    the caller, which may fix it on the spot."""
    problems = [f"nvidia-smi reported: {line}" for line in stray_lines]
    if expectations.gpu_count is not None and len(gpus) != expectations.gpu_count:
        problems.append(f"found {len(gpus)} GPUs, expected {expectations.gpu_count}")
    for gpu in gpus:
        label = gpu.label
        if any(value.lower() == _REQUIRES_RESET for value in gpu.fields.values()):
            problems.append(f"{label}: driver reports the GPU requires a reset")
        name = gpu.value("name")
        if expectations.gpu_model and not model_matches(expectations.gpu_model, name):
            problems.append(f"{label} is {name!r}, expected {expectations.gpu_model!r}")
        if _reading(gpu, "ecc.errors.uncorrected.volatile.total", problems):
            errors = gpu.value("ecc.errors.uncorrected.volatile.total")
            problems.append(f"{label}: {errors} uncorrectable ECC errors since the driver loaded")
        if _reading(gpu, "retired_pages.pending", problems):
            problems.append(f"{label}: retired pages are pending (the GPU needs a reset)")
        if _reading(gpu, "remapped_rows.pending", problems):
            problems.append(f"{label}: row remapping is pending (the GPU needs a reset)")
        if _reading(gpu, "remapped_rows.failure", problems):
            problems.append(f"{label}: row remapping failed (the GPU needs service)")
        temperature = _reading(gpu, "temperature.gpu", problems)
        if temperature is not None and temperature >= expectations.max_temperature_c:
            problems.append(
                f"{label}: temperature {temperature} C is at or above the "
                f"{expectations.max_temperature_c} C limit"
            )
    return problems


def evaluate_nvlink(gpu_indexes: Sequence[int], links: NvlinkLinks) -> list[str]:
    """Every GPU must have NVLink links, all of them up."""
    problems = []
    for gpu in gpu_indexes:
        states = links.get(gpu, {})
        down = sorted(link for link, up in states.items() if not up)
        if not any(states.values()):
            problems.append(f"GPU {gpu}: no active NVLink links")
        elif down:
            listed = ", ".join(map(str, down))
            problems.append(f"GPU {gpu}: NVLink links {listed} inactive (of {len(states)})")
    return problems


def evaluate_topology(gpu_indexes: Sequence[int], topology: Topology) -> list[str]:
    """Every GPU must reach at least one other GPU over NVLink (an NV# cell in `topo -m`)."""
    problems = []
    for gpu in gpu_indexes:
        peers = topology.get(gpu)
        if peers is None:
            problems.append(f"GPU {gpu}: missing from nvidia-smi topo -m")
        elif peers and not any(re.match(r"NV\d+$", kind) for kind in peers.values()):
            kinds = ", ".join(sorted(set(peers.values())))
            problems.append(f"GPU {gpu}: reaches no other GPU over NVLink (topology: {kinds})")
    return problems


def check_gpus(
    expectations: Expectations,
    run: CommandRunner = run_command,
    nvidia_smi: str = "nvidia-smi",
    timeout_s: float = 30.0,
    enable_persistence: bool = True,
    is_mount: Callable[[str], bool] = os.path.ismount,
) -> HealthReport:
    """Run the whole node check and return the verdict; a sick driver is a verdict, not a crash."""
    report = HealthReport(expectations)
    report.problems += [
        f"{path} is not mounted" for path in expectations.required_mounts if not is_mount(path)
    ]

    fields, result, skipped = _query(run, nvidia_smi, QUERY_FIELDS, timeout_s)
    report.notes += [f"skipped the {name} check: this driver does not know that query field" for name in skipped]
    gpus, stray = parse_gpu_query(result.stdout, fields) if not result.timed_out else ([], [])
    if not result.ok:
        report.problems.append(result.describe_failure(timeout_s))
        if not gpus:
            return report
    report.gpus = tuple(gpus)
    report.problems += evaluate_gpus(gpus, stray, expectations)
    if "persistence_mode" in fields:
        _ensure_persistence(report, run, nvidia_smi, timeout_s, enable_persistence)

    indexes = [gpu.index for gpu in gpus if gpu.index is not None]
    if len(indexes) > 1 or (expectations.gpu_count or 0) > 1:
        _check_interconnect(report, indexes, run, nvidia_smi, timeout_s)
    if expectations.fabric:
        _check_fabric(report, run, nvidia_smi, timeout_s)
    return report


def _query(
    run: CommandRunner, nvidia_smi: str, fields: Sequence[str], timeout_s: float
) -> tuple[tuple[str, ...], CommandResult, list[str]]:
    """Query, dropping any field an older driver does not know (it rejects the whole query);
    returns the fields kept, the result and the fields dropped."""
    fields, dropped = tuple(fields), []
    while True:
        result = run(query_argv(nvidia_smi, fields), timeout_s)
        rejected = _INVALID_FIELD.search(result.stdout + result.stderr)
        if result.ok or not rejected or rejected.group(1) not in fields[1:]:
            return fields, result, dropped
        dropped.append(rejected.group(1))
        fields = tuple(name for name in fields if name != rejected.group(1))


def _ensure_persistence(
    report: HealthReport, run: CommandRunner, nvidia_smi: str, timeout_s: float, enable: bool
) -> None:
    """Persistence mode keeps the driver loaded between jobs; turn it on where it is off."""
    off = [gpu for gpu in report.gpus if gpu.value("persistence_mode").lower() != "enabled"]
    if not off:
        return
    labels = ", ".join(gpu.label for gpu in off)
    if not enable:
        report.problems.append(f"persistence mode is off on {labels} (read-only check: left unchanged)")
        return
    enabled = run([nvidia_smi, "-pm", "1"], timeout_s)
    if not enabled.ok:
        report.problems.append(
            f"persistence mode is off on {labels} and enabling it failed: "
            f"{enabled.describe_failure(timeout_s)}"
        )
        return
    _, recheck, _ = _query(run, nvidia_smi, PERSISTENCE_FIELDS, timeout_s)
    rows, _ = parse_gpu_query(recheck.stdout, PERSISTENCE_FIELDS)
    if not recheck.ok or any(row.value("persistence_mode").lower() != "enabled" for row in rows):
        report.problems.append(f"persistence mode is still off on {labels} after nvidia-smi -pm 1")
    else:
        report.actions.append(f"enabled persistence mode on {labels}")


def _check_interconnect(
    report: HealthReport, indexes: Sequence[int], run: CommandRunner, nvidia_smi: str, timeout_s: float
) -> None:
    """Record NVLink and topology for multi-GPU nodes; enforce them where NVLink is expected."""
    required = report.expectations.nvlink
    for argv, parse, evaluate, what in (
        ([nvidia_smi, "nvlink", "--status"], parse_nvlink_status, evaluate_nvlink, "nvlink"),
        ([nvidia_smi, "topo", "-m"], parse_topology, evaluate_topology, "topology"),
    ):
        result = run(argv, timeout_s)
        if result.ok:
            parsed = parse(result.stdout)
            setattr(report, what, parsed)
            if required:
                report.problems += evaluate(indexes, parsed)
        elif required:
            report.problems.append(f"GPU {what} unavailable: {result.describe_failure(timeout_s)}")


def _check_fabric(report: HealthReport, run: CommandRunner, nvidia_smi: str, timeout_s: float) -> None:
    """Each GPU's fabric registration must have completed with Success; a state the driver cannot
    report (N/A, e.g. before Hopper) and a driver without a Fabric section are notes, not faults."""
    result = run([nvidia_smi, "-q"], timeout_s)
    if not result.ok:
        report.problems.append(f"GPU fabric state unavailable: {result.describe_failure(timeout_s)}")
        return
    report.fabric = parse_fabric(result.stdout)
    if not report.fabric:
        report.notes.append("nvidia-smi -q shows no Fabric section (driver before R535); fabric state not checked")
    for gpu in report.gpus if report.fabric else ():
        entry = report.fabric.get(gpu.value("pci.bus_id"), {})
        state, status = entry.get("state", ""), entry.get("status", "")
        if state.lower() in _NOT_APPLICABLE:
            report.notes.append(f"{gpu.label}: fabric state not reported ({state or 'absent'}); not checked")
        elif state.lower() != "completed":
            report.problems.append(f"{gpu.label}: NVSwitch fabric registration is {state!r}, not Completed (fabric manager)")
        elif status.lower() != "success":
            report.problems.append(f"{gpu.label}: NVSwitch fabric registration failed: {status}")


def _reading(gpu: GpuRecord, name: str, problems: list[str]) -> int | None:
    """A numeric or yes/no field as a number (yes = 1), None where it does not apply;
    an unreadable value is recorded as a problem, since health cannot be shown."""
    raw = gpu.value(name).strip()
    lowered = raw.lower()
    if name not in gpu.fields or lowered in _NOT_APPLICABLE:
        return None
    if lowered in _YES or lowered in _NO:
        return int(lowered in _YES)
    number = parse_int(raw)
    if number is None and lowered != _REQUIRES_RESET:
        problems.append(f"{gpu.label}: cannot read {name} ({raw})")
    return number


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())
