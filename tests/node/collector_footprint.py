"""Measures the collector's footprint on an 8-GPU node's readings: the peak RSS of a process that
runs only the agent bundle (the node's way: `python3 -S`, no site-packages), and the bytes of each
remote-write request.

    .venv/bin/python tests/node/collector_footprint.py [PYTHON] [CYCLES]

The 8 GPUs are the recorded H100's row (tests/fixtures/nvidia_smi/h100-watch/query-watch.csv) with
8 indexes, bus ids and UUIDs, rendered by the watch's own exporter with one Xid count per GPU. Two
runs: a workspace that accepts everything (steady state: the queue empties every cycle), and one
that is down (connection refused) until the queue holds its 50,000 samples, the most it keeps.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "node")]

from gpucloud.node.exporter import WATCH_FIELDS, render_textfile  # noqa: E402
from gpucloud.node.nvidia import GpuRecord, parse_gpu_query  # noqa: E402
from gpucloud.userdata.bundle import build_agent_bundle  # noqa: E402
from node_fakes import fixture_text  # noqa: E402

NODE = {"project": "llm", "group": "gpu-cloud-llm-train", "instance_id": "i-0123456789abcdef0", "instance_type": "p5.48xlarge"}


def eight_gpu_readings() -> str:
    [row], _ = parse_gpu_query(fixture_text("h100-watch/query-watch.csv"), WATCH_FIELDS)
    gpus = [
        GpuRecord({**row.fields, "index": str(index), "pci.bus_id": f"00000000:{0x53 + 16 * index:02X}:00.0",
                   "uuid": f"GPU-2a6ac75e-286e-d2b7-b98d-7ab75dc6b0{index:02x}"})
        for index in range(8)
    ]
    xids = {(f"{0x53 + 16 * index:02x}:00", 13, "application"): 1 for index in range(8)}
    return render_textfile(gpus, xids, {}, NODE, expected_gpus=8, fault_outcomes={})


PROGRAM = """
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from gpucloud.node.collector import Collector, CollectorSettings
from gpucloud.node.remote_write import RemoteWriter
from gpucloud.node.retry import Backoff
from gpucloud.node.sigv4 import Credentials

readings, cycles, accept = Path(sys.argv[1]).read_text(), int(sys.argv[2]), sys.argv[3] == "accept"
sizes = []

class Workspace(BaseHTTPRequestHandler):
    def do_POST(self):
        sizes.append(len(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Workspace)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1] if accept else 9
writer = RemoteWriter(f"http://127.0.0.1:{port}/api/v1/write", "us-east-1", lambda: Credentials("ASIA", "secret", "token"),
                      backoff=Backoff(attempts=1), sleep=lambda seconds: None)
collector = Collector(CollectorSettings(textfile=Path(sys.argv[4])), {}, writer, fetch=lambda url, timeout: readings)


def peak_rss_kib():
    # VmHWM, not getrusage's ru_maxrss: that one keeps the forking parent's peak across exec.
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0])

before_kib = peak_rss_kib()
started = time.process_time()
for _ in range(cycles):
    collector.cycle()
print(json.dumps({"cycles": cycles, "pending": writer.pending_samples, "sent": writer.stats.samples_sent,
                  "dropped": writer.stats.dropped, "request_bytes": sorted(set(sizes))[:3],
                  "cpu_ms_per_cycle": round(1000 * (time.process_time() - started) / cycles, 1),
                  "peak_rss_kib_before_first_cycle": before_kib,
                  "peak_rss_kib": peak_rss_kib()}))
"""


def measure(python: str, cycles: int) -> None:
    readings = eight_gpu_readings()
    with tempfile.TemporaryDirectory() as folder:
        lib = Path(folder) / "lib"
        zipfile.ZipFile(io.BytesIO(build_agent_bundle().data)).extractall(lib)
        (Path(folder) / "readings.prom").write_text(readings)
        from gpucloud.node.collector import parse_exposition
        from gpucloud.node.remote_write import encode_write_request

        samples = parse_exposition(readings, {})
        print(json.dumps({"python": subprocess.run([python, "--version"], capture_output=True, text=True).stdout.strip(),
                          "readings_bytes": len(readings), "samples_per_scrape": len(samples),
                          "protobuf_bytes": len(encode_write_request([(labels, [(value, 1764043200000)]) for labels, value in samples]))}))
        for mode, count in (("accept", cycles), ("refuse", 50_000 // len(samples) + 10)):
            result = subprocess.run(
                [python, "-S", "-c", PROGRAM, str(Path(folder) / "readings.prom"), str(count), mode, str(Path(folder) / "own.prom")],
                env={"PATH": os.environ["PATH"], "PYTHONPATH": str(lib)}, capture_output=True, text=True, check=True,
            )
            print(mode, result.stdout.strip())


if __name__ == "__main__":
    measure(sys.argv[1] if len(sys.argv) > 1 else "python3.10", int(sys.argv[2]) if len(sys.argv) > 2 else 200)
