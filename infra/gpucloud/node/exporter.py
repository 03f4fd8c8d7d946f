"""GPU readings in Prometheus text format, for node_exporter's textfile collector.

Names follow NVIDIA's dcgm-exporter where a reading means the same (its default counters:
DCGM_FI_DEV_GPU_TEMP in °C, DCGM_FI_DEV_GPU_UTIL in %, DCGM_FI_DEV_FB_USED and _FB_FREE in MiB,
DCGM_FI_DEV_POWER_USAGE in W, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FI_DEV_ROW_REMAP_FAILURE, and
DCGM_FI_DEV_XID_ERRORS, the value of the last Xid), with its `gpu`, `UUID`, `pci_bus_id` and
`modelName` labels, so dashboards and alerts written for dcgm-exporter read these too. Xid events
are also a counter, `gpucloud_xid_events_total`, which loses no event between scrapes as the
last-value gauge does. Only the standard library is used: this runs on the node.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpucloud.node.faults import THROTTLE_FIELDS
from gpucloud.node.nvidia_smi import QUERY_FIELDS, GpuRecord

WATCH_FIELDS = (*QUERY_FIELDS, "utilization.gpu", "memory.used", "memory.free", "power.draw", *THROTTLE_FIELDS)
"""What `watch` asks nvidia-smi each interval: the gate's fields plus utilisation, memory, power
and the slowdown reasons."""

GAUGES = (
    ("DCGM_FI_DEV_GPU_TEMP", "temperature.gpu", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_GPU_UTIL", "utilization.gpu", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "memory.used", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "memory.free", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "power.draw", "Power draw (in W)."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "remapped_rows.failure", "Whether remapping of rows has failed."),
    ("gpucloud_row_remap_pending", "remapped_rows.pending", "Whether rows are waiting to be remapped (a GPU reset applies them)."),
)
COUNTERS = (
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc.errors.uncorrected.volatile.total", "Total number of double-bit volatile ECC errors."),
)
_YES_NO = {"yes": 1.0, "no": 0.0, "enabled": 1.0, "disabled": 0.0, "active": 1.0, "not active": 0.0}


def bus_key(pci_bus_id: str) -> str:
    """`00000000:53:00.0` (nvidia-smi) and `0000:53:00` (kernel Xid lines) name the same GPU."""
    parts = pci_bus_id.lower().split(".")[0].split(":")
    return ":".join(parts[-2:])


def _number(raw: str) -> float | None:
    text = raw.strip().lower()
    if text in _YES_NO:
        return _YES_NO[text]
    try:
        return float(text)
    except ValueError:
        return None  # [N/A], [Not Supported], [GPU requires reset]: no sample rather than a wrong one


def _labels(values: Mapping[str, str]) -> str:
    escaped = (
        f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34)).replace(chr(10), " ")}"'
        for key, value in values.items()
    )
    return "{" + ",".join(escaped) + "}"


def render_textfile(
    gpus: Sequence[GpuRecord],
    xid_counts: Mapping[tuple[str, int, str], int],
    last_xid: Mapping[str, int],
    node_labels: Mapping[str, str],
    expected_gpus: int | None = None,
    fault_outcomes: Mapping[str, int] | None = None,
) -> str:
    """The exposition text: per GPU gauges and counters, the slowdown reasons, Xid counts by GPU,
    Xid and kind, and per node the GPUs expected and visible and what became of its node faults.
    `xid_counts` is keyed by (bus key, Xid, kind); `last_xid` by bus key."""
    by_bus = {bus_key(gpu.value("pci.bus_id")): gpu for gpu in gpus}
    gpu_labels = {
        bus: {"gpu": gpu.value("index"), "UUID": gpu.value("uuid"), "pci_bus_id": gpu.value("pci.bus_id"),
              "modelName": gpu.value("name"), **node_labels}
        for bus, gpu in by_bus.items()
    }
    lines: list[str] = []
    for kind, table in (("gauge", GAUGES), ("counter", COUNTERS)):
        for name, field, help_text in table:
            samples = [(labels, _number(by_bus[bus].value(field))) for bus, labels in gpu_labels.items()]
            samples = [(labels, value) for labels, value in samples if value is not None]
            if samples:
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
                lines += [f"{name}{_labels(labels)} {value:g}" for labels, value in samples]
    slowdowns = [
        (labels, field.rsplit(".", 1)[1].removesuffix("_slowdown"), _number(by_bus[bus].value(field)))
        for bus, labels in gpu_labels.items() for field in THROTTLE_FIELDS
    ]
    slowdowns = [(labels, reason, value) for labels, reason, value in slowdowns if value is not None]
    if slowdowns:
        lines += ["# HELP gpucloud_gpu_slowdown Whether the GPU runs slowed down for this reason (1) or not (0).",
                  "# TYPE gpucloud_gpu_slowdown gauge"]
        lines += [f"gpucloud_gpu_slowdown{_labels({**labels, 'reason': reason})} {value:g}" for labels, reason, value in slowdowns]
    if expected_gpus is not None:
        lines += ["# HELP gpucloud_gpus_expected GPUs the node's instance type has.", "# TYPE gpucloud_gpus_expected gauge",
                  f"gpucloud_gpus_expected{_labels(node_labels)} {expected_gpus}",
                  "# HELP gpucloud_gpus_visible GPUs nvidia-smi answered for.", "# TYPE gpucloud_gpus_visible gauge",
                  f"gpucloud_gpus_visible{_labels(node_labels)} {len(gpus)}"]
    if fault_outcomes is not None:
        lines += ["# HELP gpucloud_node_fault_actions_total Node faults acted on: replaced, held by the breaker, or reported only.",
                  "# TYPE gpucloud_node_fault_actions_total counter"]
        lines += [f"gpucloud_node_fault_actions_total{_labels({**node_labels, 'outcome': outcome})} {fault_outcomes.get(outcome, 0)}"
                  for outcome in ("replaced", "held", "reported")]
    lines += ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.", "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    lines += [f"DCGM_FI_DEV_XID_ERRORS{_labels(labels)} {last_xid.get(bus, 0)}" for bus, labels in gpu_labels.items()]
    lines += ["# HELP gpucloud_xid_events_total Xid events in the kernel log since the agent started watching.",
              "# TYPE gpucloud_xid_events_total counter"]
    for (bus, xid, kind), count in sorted(xid_counts.items()):
        labels = gpu_labels.get(bus, {"gpu": "", "pci_bus_id": bus, **node_labels})
        lines.append(f"gpucloud_xid_events_total{_labels({**labels, 'xid': str(xid), 'kind': kind})} {count}")
    return "\n".join(lines) + "\n"


def write_textfile(path: Path, text: str) -> None:
    """Written beside and renamed over, so the collector never reads half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


DEFAULT_LISTEN = "127.0.0.1:9835"
"""Where `watch` serves its readings for a collector on the node (loopback only: the readings carry
instance ids and nothing outside the node needs them; dcgm-exporter's 9400 is left free)."""


SIBLING_TEXTFILES = "gpucloud_*.prom"
"""Readings other agent commands write beside the watch's (`gpucloud-node preflight`'s
gpucloud_preflight.prom), served with it so the collector sends them on too."""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def serve_textfile(path: Path, listen: str = DEFAULT_LISTEN):
    """Serve the latest textfile, and the agent's other textfiles beside it, at /metrics from a
    daemon thread; returns the server (its `server_address` says the port when 0 was asked for)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    host, _, port = listen.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = b"".join(_read(item) for item in (Path(path), *sorted(Path(path).parent.glob(SIBLING_TEXTFILES))))
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
