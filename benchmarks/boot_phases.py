"""The node's boot phases that run on a GPU host without AWS, recorded with the node's own
readings (`gpucloud.node.boot_phases`), to check the plan's cold-start figures
(`gpucloud/data/cold_start.json`) against a real machine:

  agent     the agent bundle's install and boot manifest (`gpucloud.node.boot.boot`), its
            systemctl steps answered by a stand-in (the host has no systemd) and its S3 fetch
            left out (no network);
  gate      the node check on the host's real GPUs (`nvidia-smi` queries, `check_gpus`);
  pull      a local image's layers: a gzip tar extracted (`tar -xzf`), the work a pull does after
            the download, so the documented network rate, not the host, bounds the estimate;
  weights   a weights file copied to another directory and synced to disk (the /scratch copy);
  healthy   the weights read into GPU memory with PyTorch (a server's load), where PyTorch is,
            then an HTTP server started and polled until its health check answers.

    python3 benchmarks/boot_phases.py --out tests/fixtures/gpu/boot_phases_h200.json   # on the GPU host
    .venv/bin/python benchmarks/boot_phases.py --smoke --out /tmp/phases.json          # CPU, small (tests)
"""

from __future__ import annotations

import argparse
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "infra"))

from gpucloud.node import boot_phases  # noqa: E402
from gpucloud.node.boot import boot  # noqa: E402
from gpucloud.node.commands import CommandResult, run_command  # noqa: E402
from gpucloud.node.containers import healthy  # noqa: E402
from gpucloud.node.nvidia import Expectations, check_gpus  # noqa: E402

MIB = 1024 * 1024


def agent(work: Path) -> float:
    """Install the bundle's files into a scratch root and run its steps through a stand-in runner."""
    from gpucloud.userdata.bundle import build_agent_bundle

    bundle = build_agent_bundle()
    source = work / "bundle"
    zipfile.ZipFile(io.BytesIO(bundle.data)).extractall(source)
    steps = []

    def systemctl(argv, timeout_s, env=None):
        steps.append(list(argv))
        return CommandResult(tuple(argv), returncode=0)

    start = time.time()
    assert boot(systemctl, source=source, root=work / "root") == 0
    boot_phases.note("agent", start, time.time())
    return time.time() - start


def gate(gpus: int | None) -> dict:
    """The node check on the host's GPUs, as the gate runs it (no launch hook: no AWS here)."""
    start = time.time()
    report = check_gpus(Expectations(gpu_count=gpus), run=run_command)
    boot_phases.note("gate", start, time.time())
    driver = run_command(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], 30).stdout.split()
    return {"healthy": report.healthy, "gpus": [gpu.value("name") for gpu in report.gpus], "driver": driver[:1],
            "problems": report.problems, "notes": report.notes}


def pull(work: Path, size_mib: int) -> float:
    """Extract a gzip tar of `size_mib` of half-compressible layer data; MB/s of the tar's bytes."""
    layer = work / "layer"
    layer.mkdir()
    chunk = os.urandom(MIB // 2) + bytes(MIB // 2)
    for index in range(size_mib):
        (layer / f"blob{index // 64}").open("ab").write(chunk)
    archive = work / "layer.tar.gz"
    subprocess.run(["tar", "-czf", str(archive), "-C", str(layer), "."], check=True)
    target = work / "extracted"
    target.mkdir()
    start = time.time()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(target)], check=True)
    os.sync()
    end = time.time()
    boot_phases.note("pull", start, end, container="local-image")
    return archive.stat().st_size / 1e6 / (end - start)


def weights(work: Path, size_mib: int) -> tuple[float, Path]:
    """Copy a weights file and sync it; MB/s."""
    source = work / "source.bin"
    with source.open("wb") as handle:
        for _ in range(size_mib):
            handle.write(os.urandom(MIB))
    copy = work / "scratch" / "weights.bin"
    copy.parent.mkdir()
    start = time.time()
    shutil.copyfile(source, copy)
    with copy.open("rb+") as handle:
        os.fsync(handle.fileno())
    end = time.time()
    boot_phases.note("weights", start, end, container="local-weights")
    return size_mib * MIB / 1e6 / (end - start), copy


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


def load_and_serve(copy: Path, gpu: bool) -> dict:
    """Read the weights into GPU memory (PyTorch, if the host has it and a GPU), then start a
    server and poll its health check as the container's supervisor does."""
    start = time.time()
    loaded = "no PyTorch or no GPU: the file was read only"
    try:
        if not gpu:
            raise ImportError("smoke run")
        import torch

        if torch.cuda.is_available():
            data = torch.frombuffer(bytearray(copy.read_bytes()), dtype=torch.uint8).cuda()
            torch.cuda.synchronize()
            loaded = f"{data.numel() / 1e9:.2f} GB on {torch.cuda.get_device_name()}"
            del data
        else:
            copy.read_bytes()
    except ImportError:
        copy.read_bytes()
    load_seconds = time.time() - start
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while not healthy(server.server_port, "/", 1.0):
        time.sleep(0.05)
    server.shutdown()
    boot_phases.note("healthy", start, time.time(), container="local-server")
    return {"loadSeconds": round(load_seconds, 3), "loaded": loaded}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the fixture to write")
    parser.add_argument("--smoke", action="store_true", help="small sizes, no GPU needed (tests)")
    parser.add_argument("--image-mib", type=int, default=2048)
    parser.add_argument("--weights-mib", type=int, default=4096)
    arguments = parser.parse_args(argv)
    image_mib, weights_mib = (8, 8) if arguments.smoke else (arguments.image_mib, arguments.weights_mib)
    with tempfile.TemporaryDirectory(prefix="gpucloud-boot-phases-") as scratch:
        work = Path(scratch)
        os.environ[boot_phases.DIRECTORY_ENV] = str(work / "readings")
        result = {"command": " ".join(["python3", "benchmarks/boot_phases.py", *(argv or sys.argv[1:])]),
                  "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "imageMiB": image_mib, "weightsMiB": weights_mib}
        result["agentSeconds"] = round(agent(work), 3)
        result["gate"] = {} if arguments.smoke else gate(None)
        result["extractMBps"] = round(pull(work, image_mib), 1)
        copy_rate, copy = weights(work, weights_mib)
        result["copyMBps"] = round(copy_rate, 1)
        result.update(load_and_serve(copy, gpu=not arguments.smoke))
        # boot() also records the kernel's start (long before, on a lent host) and a mount that
        # here is a stand-in: neither is a reading of this host's boot.
        result["phases"] = {key: span for key, span in boot_phases.read().items() if key not in ("boot", "mount")}
        result["phaseSeconds"] = {key: round(span["end"] - span["start"], 3) for key, span in result["phases"].items()}
        result["readings"] = boot_phases.render_readings(result["phases"])
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["phaseSeconds"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
