"""One rank of the fabric preflight, started by torchrun under `gpucloud-node preflight` (never
imported by the agent: it needs the image's PyTorch, which the agent's own Python may lack).

Each rank times a bf16 matrix multiply and a device-memory copy on its own GPU (`--checks local`),
then an all_reduce sweep across every rank of the set (`--checks fabric`), and writes what it
measured to `<out>/rank-<global rank>.json`. The sweep follows nccl-tests' definitions
(NVIDIA/nccl-tests doc/PERFORMANCE.md, read 2026-11-28): algbw = bytes / time of one operation,
busbw = algbw * 2(n-1)/n for all_reduce over n ranks, and each size's time is the slowest rank's
average, so every rank reports the same figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

QUICK_SIZES_MIB = (1, 16, 64, 256, 1024)
FULL_SIZES_MIB = (*QUICK_SIZES_MIB, 4096)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checks", default="local,fabric")
    parser.add_argument("--level", choices=["quick", "full"], default="quick")
    parser.add_argument("--timeout-s", type=float, default=90.0)
    arguments = parser.parse_args()
    checks = set(arguments.checks.split(","))

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    started = time.monotonic()
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=arguments.timeout_s),
                            **({"device_id": device} if cuda else {}))
    rank, world = dist.get_rank(), dist.get_world_size()
    result = {
        "rank": rank, "world_size": world, "local_rank": local_rank,
        "group_rank": int(os.environ.get("GROUP_RANK", "0")),
        "gpu": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
        "init_seconds": round(time.monotonic() - started, 2),
    }
    if "local" in checks:
        burn = 10.0 if arguments.level == "full" else 0.0
        result["matmul_tflops"] = matmul_tflops(device, burn)
        result["copy_gbps"] = copy_gbps(device, burn)
    if "fabric" in checks:
        sizes = FULL_SIZES_MIB if arguments.level == "full" else QUICK_SIZES_MIB
        result["correct"] = all_reduce_correct(device, world)
        result["sweep"] = [sweep_point(device, world, mib << 20) for mib in sizes]
    result["seconds"] = round(time.monotonic() - started, 2)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / f"rank-{rank}.json").write_text(json.dumps(result), encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()
    return 0


def _elapsed(device: torch.device, work, iterations: int) -> float:
    """Seconds per call of `work`, after two warm-up calls."""
    for _ in range(2):
        work()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(iterations):
        work()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / iterations


def matmul_tflops(device: torch.device, burn_s: float) -> float:
    """bf16 n x n by n x n, 2n^3 operations per call; with a burn, the slowest second of it."""
    n = 8192 if device.type == "cuda" else 512
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    iterations = 50 if device.type == "cuda" else 2
    rates = [2 * n**3 / _elapsed(device, lambda: torch.mm(a, b), iterations) / 1e12]
    deadline = time.monotonic() + burn_s
    while time.monotonic() < deadline:
        rates.append(2 * n**3 / _elapsed(device, lambda: torch.mm(a, b), iterations) / 1e12)
    return round(min(rates), 1)


def copy_gbps(device: torch.device, burn_s: float) -> float:
    """A 1 GiB device-to-device copy, bytes read plus bytes written per second."""
    size = (1 << 30) if device.type == "cuda" else (16 << 20)
    source = torch.empty(size, dtype=torch.uint8, device=device).fill_(1)
    target = torch.empty_like(source)
    iterations = 20 if device.type == "cuda" else 2
    rates = [2 * size / _elapsed(device, lambda: target.copy_(source), iterations) / 1e9]
    deadline = time.monotonic() + burn_s
    while time.monotonic() < deadline:
        rates.append(2 * size / _elapsed(device, lambda: target.copy_(source), iterations) / 1e9)
    return round(min(rates), 1)


def all_reduce_correct(device: torch.device, world: int) -> bool:
    values = torch.ones(1 << 20, device=device, dtype=torch.float32)
    dist.all_reduce(values)
    return bool(torch.all(values == world).item())


def sweep_point(device: torch.device, world: int, size: int) -> dict:
    """One size of the sweep: float32 sum, in place, nccl-tests' algbw and busbw in GB/s."""
    tensor = torch.ones(size // 4, device=device, dtype=torch.float32)
    iterations = 20 if size <= (256 << 20) else 5
    dist.barrier()
    seconds = _elapsed(device, lambda: dist.all_reduce(tensor), iterations)
    slowest = torch.tensor([seconds], device=device, dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    seconds = float(slowest.item())
    algbw = size / seconds / 1e9
    return {"bytes": size, "seconds": seconds, "algbw_gbps": round(algbw, 2),
            "busbw_gbps": round(algbw * 2 * (world - 1) / world, 2)}


if __name__ == "__main__":
    raise SystemExit(main())
