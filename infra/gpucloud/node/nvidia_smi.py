"""`nvidia-smi`'s output read as data: the query it is asked, its GPU rows, and the NVLink, topology
and fabric reports; pure functions over its text, which the health check (`nvidia`), the watch,
the exporter and the fault rules share."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "uuid",
    "name",
    "driver_version",
    "persistence_mode",
    "temperature.gpu",
    "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "remapped_rows.pending",
    "remapped_rows.failure",
)
PERSISTENCE_FIELDS = ("index", "persistence_mode")

# `nvidia-smi topo -m` underlines its header with terminal escapes even when not on a terminal.
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU_NAME = re.compile(r"^GPU(\d+)$")
_QUERY_REPORT_GPU = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)\s*$")

NvlinkLinks = Mapping[int, Mapping[int, bool]]
"""Per GPU index, each NVLink link number and whether it is up."""
Topology = Mapping[int, Mapping[int, str]]
"""Per GPU index, the connection to each other GPU as `topo -m` prints it (NV18, SYS, PHB...)."""


@dataclass(frozen=True)
class GpuRecord:
    """One row of `nvidia-smi --query-gpu`, keyed by query field, values as printed."""

    fields: Mapping[str, str]

    def value(self, name: str) -> str:
        return self.fields.get(name, "")

    @property
    def index(self) -> int | None:
        return parse_int(self.value("index"))

    @property
    def label(self) -> str:
        return f"GPU {self.value('index') or self.value('pci.bus_id') or '?'}"


def query_argv(nvidia_smi: str, fields: Sequence[str] = QUERY_FIELDS) -> list[str]:
    return [nvidia_smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]


def parse_gpu_query(text: str, fields: Sequence[str] = QUERY_FIELDS) -> tuple[list[GpuRecord], list[str]]:
    """GPU rows, and the lines that were not rows: that is where nvidia-smi complains about a
    GPU it cannot reach ("Unable to determine the device handle for GPU...")."""
    gpus, stray = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in next(csv.reader([line]))]
        if len(cells) == len(fields):
            gpus.append(GpuRecord(dict(zip(fields, cells))))
        else:
            stray.append(line.strip())
    return gpus, stray


def parse_nvlink_status(text: str) -> dict[int, dict[int, bool]]:
    """Parse `nvidia-smi nvlink --status`: `GPU n: ...` headers, then `Link k: 26.562 GB/s` or
    `Link k: <inactive>`. A GPU whose links are all down may list none (NVML says so instead)."""
    links: dict[int, dict[int, bool]] = {}
    current = None
    for line in text.splitlines():
        line = _ANSI_ESCAPE.sub("", line).strip()
        gpu = re.match(r"GPU (\d+):", line)
        if gpu:
            current = links.setdefault(int(gpu.group(1)), {})
            continue
        link = re.match(r"Link (\d+):\s*(.*)", line)
        if link and current is not None:
            state = link.group(2).strip().lower()
            current[int(link.group(1))] = bool(state) and "inactive" not in state
    return links


def parse_topology(text: str) -> dict[int, dict[int, str]]:
    """Parse the GPU-to-GPU part of the `nvidia-smi topo -m` matrix (tab-separated cells)."""
    header: list[str] | None = None
    matrix: dict[int, dict[int, str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in _ANSI_ESCAPE.sub("", line).split("\t")]
        if header is None:
            if any(_GPU_NAME.match(cell) for cell in cells):
                header = cells
            continue
        row = _GPU_NAME.match(cells[0])
        if not row:
            if matrix:
                break
            continue
        gpu = int(row.group(1))
        matrix[gpu] = {
            int(column.group(1)): cell
            for column, cell in ((_GPU_NAME.match(name), cell) for name, cell in zip(header, cells))
            if column and int(column.group(1)) != gpu
        }
    return matrix


def parse_fabric(text: str) -> dict[str, dict[str, str]]:
    """The State and Status of each GPU's `Fabric` section in `nvidia-smi -q`, by PCI bus id;
    empty where the driver prints no such section (before R535)."""
    fabric: dict[str, dict[str, str]] = {}
    bus_id, in_fabric = None, False
    for line in text.splitlines():
        header = _QUERY_REPORT_GPU.match(line)
        depth = len(line) - len(line.lstrip(" "))
        if header:
            bus_id, in_fabric = header.group(1), False
        elif depth == 4:
            in_fabric = line.strip() == "Fabric"
        elif in_fabric and depth == 8 and bus_id:
            name, _, value = line.strip().partition(":")
            if name.strip() in ("State", "Status"):
                fabric.setdefault(bus_id, {})[name.strip().lower()] = value.strip()
    return fabric


def parse_int(raw: str) -> int | None:
    try:
        return int(float(raw))
    except (ValueError, OverflowError):
        return None
