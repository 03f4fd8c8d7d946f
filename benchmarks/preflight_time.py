"""How long the fabric preflight takes for 2 to 16 nodes, from the rounds recorded on four H200s
(tests/fixtures/gpu/preflight_*.json), against the target: `quick` within 2 minutes.

No EFA fleet is at hand, so this is a model built on measured parts, each printed:

  fixed     a recorded round's wall time less its all_reduce sweep (the agent's start, the GPU gate,
            the launcher, torchrun's start, PyTorch's import, NCCL's init, the matmul and the copy),
            the slowest recorded round;
  sweep     the quick sweep's sizes and iterations (node/preflight_worker.py) timed at the type's
            bus-bandwidth floor: the slowest a passing set can be, algbw = busbw * n / (2(n-1));
  init      NCCL's init grows with the ranks; one host shows it only up to four, so the model adds
            INIT_PER_DOUBLING_S for each doubling of the nodes beyond the recording's;
  ssm       Run Command's delivery and the polls that read the results (SSM_S).

`full` adds the two 10-second burns of each GPU and the 4 GiB size. A failed quick round goes on
to the search's rounds (each `preflight-fabric`, counted as a whole quick round); the worst case is
a first round, ceil(log2 N) - 1 halvings and a round of partner tests, before the replacement.

    .venv/bin/python benchmarks/preflight_time.py                 # 2, 4, 8, 16 nodes of p5.48xlarge
    .venv/bin/python benchmarks/preflight_time.py --nodes 2 --smoke   # does it still run? (tests)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "infra"))

from gpucloud.node.preflight import TIMEOUTS_S, busbw_floor, load_floors  # noqa: E402

RECORDINGS = REPOSITORY / "tests" / "fixtures" / "gpu"
QUICK_SIZES_MIB = (1, 16, 64, 256, 1024)
FULL_EXTRA_MIB = 4096
ITERATIONS = {size: (20 if size <= 256 else 5) + 2 for size in (*QUICK_SIZES_MIB, FULL_EXTRA_MIB)}
"""Timed iterations plus two warm-up calls per size, as preflight_worker.sweep_point runs them."""
BURN_S = 2 * 10.0
INIT_PER_DOUBLING_S = 2.0
SSM_S = 15.0
"""Delivery (the agent's channel) and a 5-second poll of every invocation, with room."""
TARGET_S = 120.0


def recorded_parts() -> dict[str, float]:
    """The slowest recorded round's fixed part, and the recording's node count."""
    fixed, nodes = 0.0, 1
    for name in ("nvlink", "loaded"):
        record = json.loads((RECORDINGS / f"preflight_{name}.json").read_text(encoding="utf-8"))
        for run in record["runs"]:
            for seconds, node_results in zip(run["round_seconds"], run["rounds"]):
                sweep = max(sum(point["seconds"] * ITERATIONS[point["bytes"] >> 20] for point in result["sweep"])
                            for result in node_results)
                fixed = max(fixed, seconds - sweep)
                nodes = max(nodes, len(node_results[0]["set"]))
    return {"fixed": fixed, "nodes": nodes}


def sweep_seconds(sizes_mib, busbw: float, ranks: int) -> float:
    algbw = busbw * ranks / (2 * (ranks - 1))
    return sum(ITERATIONS[size] * (size << 20) / (algbw * 1e9) for size in sizes_mib)


def round_seconds(parts: dict[str, float], nodes: int, gpus: int, busbw: float, level: str = "quick") -> float:
    sizes = (*QUICK_SIZES_MIB, FULL_EXTRA_MIB) if level == "full" else QUICK_SIZES_MIB
    doublings = max(0.0, math.log2(nodes / parts["nodes"]))
    burns = BURN_S if level == "full" else 0.0
    return parts["fixed"] + sweep_seconds(sizes, busbw, nodes * gpus) + INIT_PER_DOUBLING_S * doublings + SSM_S + burns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--instance-type", default="p5.48xlarge")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="one size, and say so (tests/test_benchmarks.py)")
    arguments = parser.parse_args(argv)
    parts = recorded_parts()
    floors = load_floors()
    print(f"recorded fixed part of a round: {parts['fixed']:.1f} s (up to {parts['nodes']} nodes on one host); "
          f"ssm {SSM_S:.0f} s; init +{INIT_PER_DOUBLING_S:.0f} s per doubling; torchrun limit {TIMEOUTS_S['quick']} s")
    print("nodes type          floor GB/s  quick s  full s  worst rounds  worst quick+search s  quick<=120s")
    missed = []
    for nodes in arguments.nodes:
        busbw = busbw_floor(floors, arguments.instance_type, nodes) or 1.0
        quick = round_seconds(parts, nodes, arguments.gpus_per_node, busbw)
        full = round_seconds(parts, nodes, arguments.gpus_per_node, busbw, "full")
        rounds = 1 + max(0, math.ceil(math.log2(nodes)) - 1) + 1
        worst = rounds * quick  # a search round skips the gate and the burns; counted as a whole round
        met = quick <= TARGET_S
        missed += [] if met else [nodes]
        print(f"{nodes:>5} {arguments.instance_type:<13} {busbw:>10.0f} {quick:>8.1f} {full:>7.1f} {rounds:>13} "
              f"{worst:>21.1f}  {'yes' if met else 'NO'}")
    if arguments.smoke:
        print("smoke run: the model ran on the recorded rounds")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
