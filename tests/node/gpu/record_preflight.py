"""Records the fabric preflight on one host of several GPUs, each "node" a loopback address running
`gpucloud-node preflight` (which starts its torchrun step through the job launcher), with this
repository's search (gpucloud.ops.preflight) choosing each next round, and writes what happened as
JSON fixtures. Run on the device with four H200s:

    python3 tests/node/gpu/record_preflight.py --out-dir tests/fixtures/gpu

It writes
  preflight_nvlink.json     two nodes of two GPUs, then four nodes of one: passes over NVLink
  preflight_sockets.json    the same with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (NCCL on TCP sockets)
  preflight_loaded.json     four nodes of one, the third node's GPU running a competing matmul: a
                            round with the node checks, then the bisection on the fabric alone
  preflight_launcher_overhead.json  all_reduce bus bandwidth of bare `torchrun --standalone` and of
                            the same worker through `gpucloud-node launch`, alternated, in one run

Stand-ins, as in record_torchrun.py: GPUCLOUD_NODE_IPV4 for the metadata service's local-ipv4,
GPUCLOUD_INSTANCE_TYPE=nvidia-h200-x4 for its instance-type (the floors file's `hosts` entry), a
GPUCLOUD_ROOT per node. One host cannot show EFA or traffic between hosts; NVLink multicast stays off.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPOSITORY / "infra"))

from gpucloud.node.launcher import encode_command  # noqa: E402
from gpucloud.node.preflight import RESULT_MARKER, WORKER_PATH  # noqa: E402
from gpucloud.ops.preflight import busbw_floor, load_floors, search  # noqa: E402
from record_torchrun import interpreter_path, listed_gpus  # noqa: E402 - beside this script

HOST_KIND = "nvidia-h200-x4"
JOB_ID = "train-20261128000000-a1b2"
SAFE = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
SOCKETS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
LOAD = ("import torch\nx = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)\n"
        "while True:\n    torch.mm(x, x)\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--only", help="comma-separated: nvlink,sockets,loaded,launcher_overhead")
    arguments = parser.parse_args(argv)
    recorded_by = "python3 " + " ".join(shlex.quote(part) for part in
                                        [str(Path(sys.argv[0])), *(argv if argv is not None else sys.argv[1:])])
    subprocess.run(["nvidia-smi", "-pm", "1"], capture_output=True, timeout=60)  # as the boot gate leaves it
    scenarios = {"nvlink": record_nvlink, "sockets": record_sockets, "loaded": record_loaded,
                 "launcher_overhead": record_overhead}
    chosen = arguments.only.split(",") if arguments.only else list(scenarios)
    failures = 0
    for name in chosen:
        work = Path(tempfile.mkdtemp(prefix=f"gpucloud-preflight-{name}-"))
        try:
            record = {"about": scenarios[name].__doc__.strip(), **scenarios[name](work)}
        except Exception as error:  # noqa: BLE001 - record what broke, go on with the next scenario
            failures += 1
            record = {"about": scenarios[name].__doc__.strip(), "error": repr(error)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        record.update(recorded_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), gpus=listed_gpus(),
                      python=sys.version.split()[0], recorded_by=recorded_by)
        arguments.out_dir.mkdir(parents=True, exist_ok=True)
        path = arguments.out_dir / f"preflight_{name}.json"
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(name, json.dumps(_brief(record)), flush=True)
    return 1 if failures else 0


def _brief(record: dict) -> dict:
    if "error" in record:
        return {"error": record["error"]}
    return {key: value for key, value in record.items() if key in ("verdicts", "comparison")}


def record_nvlink(work: Path) -> dict:
    """The preflight (node checks and the all_reduce sweep) as two nodes of two GPUs and as four
    nodes of one, over NVLink, as gpucloud run's first round sends it."""
    runs = [_search(work / "2x2", 2, 2, {}), _search(work / "4x1", 4, 1, {})]
    return {"runs": runs, "verdicts": [run["verdict"] for run in runs]}


def record_sockets(work: Path) -> dict:
    """The same with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1, so NCCL goes between the GPUs over
    TCP sockets (NET/Socket), the silent fallback of a node without EFA; the search runs to its end."""
    runs = [_search(work / "2x2", 2, 2, SOCKETS), _search(work / "4x1", 4, 1, SOCKETS)]
    return {"runs": runs, "verdicts": [run["verdict"] for run in runs]}


def record_loaded(work: Path) -> dict:
    """Four nodes of one GPU, the third node's GPU (127.0.0.3) busy with a competing bf16 matmul
    process for the whole recording: one round with the node checks, then the search on the fabric
    alone (each round only the all_reduce, as if the node had passed its own checks)."""
    load = subprocess.Popen([sys.executable, "-c", LOAD], env={**os.environ, **SAFE, "CUDA_VISIBLE_DEVICES": "2"})
    try:
        time.sleep(15)
        checked = _search(work / "checked", 4, 1, {}, max_rounds=1)
        fabric = _search(work / "fabric", 4, 1, {}, checks="fabric")
    finally:
        load.kill()
        load.wait()
    return {"loaded_node": "127.0.0.3", "runs": [checked, fabric], "verdicts": [checked["verdict"], fabric["verdict"]]}


def record_overhead(work: Path) -> dict:
    """all_reduce bus bandwidth at 4 GiB on the four GPUs: bare `torchrun --standalone` and the
    same worker through `gpucloud-node launch` (one node of four GPUs), alternated three times."""
    samples: dict[str, list[float]] = {"torchrun": [], "launch": []}
    for index in range(3):
        for way in ("torchrun", "launch"):
            out = work / f"{way}-{index}"
            worker = [str(WORKER_PATH), "--out", str(out), "--checks", "fabric", "--level", "full"]
            if way == "torchrun":
                argv = ["torchrun", "--standalone", "--nproc-per-node", "4", *worker]
                environment = {**os.environ, **SAFE, "PATH": interpreter_path()}
            else:
                command = ["torchrun", "--nnodes", "$NNODES", "--nproc-per-node", "$NPROC_PER_NODE", "--node-rank",
                           "$NODE_RANK", "--rdzv-backend", "c10d", "--rdzv-endpoint", "$MASTER_ADDR:$MASTER_PORT",
                           "--rdzv-id", "$GPUCLOUD_JOB_ID", *worker]
                argv = [sys.executable, "-m", "gpucloud.node", "launch", "--job", JOB_ID, "--nodes", "127.0.0.1",
                        "--port", str(29600 + index), "--gpus-per-node", "4", "--command-b64", encode_command(command)]
                environment = _node_environment(work / "launch-node", "127.0.0.1", None, {})
            done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise RuntimeError(f"{way} exited {done.returncode}: {done.stderr[-2000:]}")
            figures = json.loads((out / "rank-0.json").read_text(encoding="utf-8"))
            samples[way].append(figures["sweep"][-1]["busbw_gbps"])
    medians = {way: sorted(values)[1] for way, values in samples.items()}
    return {"samples_busbw_gbps": samples, "bytes": 4 << 30,
            "comparison": {**medians, "launch_over_torchrun": round(medians["launch"] / medians["torchrun"], 4)}}


def _search(work: Path, nodes: int, gpus_per_node: int, extra: dict[str, str], checks: str = "local,fabric",
            max_rounds: int = 5) -> dict:
    """Rounds of `gpucloud-node preflight` on loopback nodes until the search has a verdict."""
    addresses = [f"127.0.0.{index + 1}" for index in range(nodes)]
    floors = load_floors()

    def floor_of(count: int) -> float | None:
        return busbw_floor(floors, HOST_KIND, count)

    rounds: list[list[dict]] = []
    timings = []
    state, verdict = search(addresses, rounds, floor_of, max_rounds)
    while verdict.action == "test" and len(rounds) < max_rounds:
        started = time.monotonic()
        round_checks = checks if not rounds else "fabric"
        running = []
        for number, members in enumerate(verdict.sets):
            for node in members:
                index = addresses.index(node)
                devices = ",".join(str(index * gpus_per_node + gpu) for gpu in range(gpus_per_node))
                argv = [sys.executable, "-m", "gpucloud.node", "preflight", "--job", JOB_ID, "--nodes", ",".join(members),
                        "--port", str(29500 + 10 * number + len(rounds)), "--gpus-per-node", str(gpus_per_node),
                        "--checks", round_checks, "--textfile", str(work / node / "readings.prom")]
                environment = _node_environment(work / node, node, devices, extra)
                running.append(subprocess.Popen(argv, env=environment, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = []
        for process in running:
            stdout, stderr = process.communicate(timeout=240)
            lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARKER)]
            if not lines:
                raise RuntimeError(f"no preflight result (exit {process.returncode}): {stderr[-3000:]}")
            results.append(json.loads(lines[-1][len(RESULT_MARKER):]))
        rounds.append(results)
        timings.append(round(time.monotonic() - started, 1))
        state, verdict = search(addresses, rounds, floor_of, max_rounds)
    return {"nodes": addresses, "gpus_per_node": gpus_per_node, "environment": {**SAFE, **extra},
            "floors": {str(count): floor_of(count) for count in range(1, nodes + 1)},
            "rounds": rounds, "round_seconds": timings,
            "verdict": {"action": verdict.action, "sets": [list(item) for item in verdict.sets],
                        "culprits": dict(verdict.culprits), "reason": verdict.reason}}


def _node_environment(home: Path, node: str, devices: str | None, extra: dict[str, str]) -> dict[str, str]:
    """One node's own /run and config; its GPUs; the scenario's NCCL settings."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "node.json").write_text(json.dumps({"checkpoint_dir": str(home / "checkpoints"),
                                                "expected_gpu_model": "H200"}), encoding="utf-8")
    environment = dict(os.environ, **SAFE, **extra, PYTHONPATH=str(REPOSITORY / "infra"), GPUCLOUD_ROOT=str(home / "root"),
                       GPUCLOUD_NODE_IPV4=node, GPUCLOUD_NODE_CONFIG=str(home / "node.json"),
                       GPUCLOUD_INSTANCE_TYPE=HOST_KIND, PATH=interpreter_path())
    if devices is not None:
        environment["CUDA_VISIBLE_DEVICES"] = devices
    return environment


if __name__ == "__main__":
    raise SystemExit(main())
