"""Records a real `torchrun` job started by the node launcher exactly as `gpucloud run` starts it on
one node, then resumed from its checkpoint, and writes what happened as JSON.

    python3 tests/node/gpu/record_torchrun.py --backend nccl --out tests/fixtures/gpu/torchrun_launcher.json
    python3 tests/node/gpu/record_torchrun.py --backend nccl --nodes 127.0.0.1,127.0.0.2 --gpus-per-node 1 \
        --out tests/fixtures/gpu/torchrun_launcher_two_nodes.json

The second runs two launchers at once on one host, as two nodes (loopback addresses 127.0.0.1 and
127.0.0.2, one GPU each): the two torchrun agents meet at the c10d rendezvous with the ranks the
launchers derived from those addresses, and NCCL runs between the two GPUs of the host.

Attempt 0 trains until `--fail-at-step` and fails there after its checkpoint (a node lost mid-job);
attempt 1 starts on an empty checkpoint directory (a replacement node), so the launcher must
restore the checkpoint from the job's store before torchrun starts, and trains to the end.

Stand-ins, because the recording machine has no network and no instance metadata: the job's
checkpoint URI is a file:// directory instead of the stack's S3 write prefix, and the node's
private IPv4 comes from GPUCLOUD_NODE_IPV4 (`--node-ip`) instead of IMDSv2. Everything else is the
agent's own code path: `python3 -m gpucloud.node launch` with the flags the SSM document passes.
One host cannot show traffic between hosts (EFA, the security group): NCCL stays inside it.
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
TRAIN_SCRIPT = Path(__file__).resolve().parent / "train_tiny.py"
JOB_ID = "tiny-20261125000000-a1b2"
sys.path.insert(0, str(REPOSITORY / "infra"))

from gpucloud.node.launcher import encode_command  # noqa: E402

TORCHRUN = ["torchrun", "--nnodes", "$NNODES", "--nproc-per-node", "$NPROC_PER_NODE", "--node-rank", "$NODE_RANK",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", "$MASTER_ADDR:$MASTER_PORT", "--rdzv-id", "$GPUCLOUD_JOB_ID"]
"""The user's command as the README documents it (`gpucloud run ... -- torchrun --nnodes '$NNODES' ...`):
the launcher puts each node's values in place of the `$` words."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--fail-at-step", type=int, default=10)
    parser.add_argument("--nodes", default="127.0.0.1",
                        help="the job's node IPv4s; several run on this one host, one GPU each (127.0.0.2 etc. are loopback)")
    parser.add_argument("--port", type=int, default=29500, help="MASTER_PORT")
    parser.add_argument("--gpus-per-node", type=int,
                        help="pass to the launcher (default: none, so it counts the GPUs with nvidia-smi -L)")
    arguments = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gpucloud-record-"))
    try:
        record = record_run(arguments, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record["recorded_by"] = "python3 " + " ".join(shlex.quote(part) for part in
                                                  [str(Path(sys.argv[0])), *(argv if argv is not None else sys.argv[1:])])
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({attempt["attempt"]: attempt["exit_status"] for attempt in record["attempts"]}))
    return 0 if [attempt["exit_status"] for attempt in record["attempts"]] == [1, 0] else 1


def record_run(arguments: argparse.Namespace, work: Path) -> dict:
    """Each attempt starts one launcher per node at once, as SSM does on every node of the job."""
    nodes = arguments.nodes.split(",")
    store = work / "store"
    attempts = []
    for attempt in (0, 1):
        report = work / f"report-{attempt}.json"
        fail = ["--fail-at-step", str(arguments.fail_at_step)] if attempt == 0 else []
        command = [*TORCHRUN, str(TRAIN_SCRIPT), "--backend", arguments.backend, "--steps", str(arguments.steps),
                   "--checkpoint-every", str(arguments.checkpoint_every), *fail, "--report", str(report)]
        launch = [sys.executable, "-m", "gpucloud.node", "launch", "--job", JOB_ID, "--nodes", arguments.nodes,
                  "--port", str(arguments.port), "--attempt", str(attempt), "--checkpoint-uri", store.as_uri() + "/",
                  "--command-b64", encode_command(command)]
        if arguments.gpus_per_node:
            launch[4:4] = ["--gpus-per-node", str(arguments.gpus_per_node)]
        started = time.monotonic()
        running = [(node, subprocess.Popen(launch, env=_node_environment(work, node, index, len(nodes)),
                                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True))
                   for index, node in enumerate(nodes)]
        finished = [(node, process, *process.communicate()) for node, process in running]
        seconds = round(time.monotonic() - started, 1)
        results = []
        for node, process, stdout, stderr in finished:
            job = work / node / "root/run/gpucloud/jobs" / JOB_ID
            results.append({
                "node_ipv4": node,
                "exit_status": process.returncode,
                "command_environment": _environment_file(job / "env"),
                "hostfile": (job / "hostfile").read_text(encoding="utf-8"),
                "launcher_log": [line for line in stderr.splitlines() if line.startswith(("INFO", "WARNING", "ERROR"))],
            })
            if process.returncode != (1 if attempt == 0 else 0) or not report.is_file():
                sys.stderr.write(stdout + stderr)
        attempts.append({
            "attempt": attempt,
            "exit_status": max(result["exit_status"] for result in results),
            "seconds": seconds,
            "launcher_argv": [str(part) for part in launch[1:]],
            "command": command,
            "nodes": results,
            "store_after": sorted(path.name for path in store.glob("*")),
            "worker": json.loads(report.read_text(encoding="utf-8")) if report.is_file() else None,
        })
    return {
        "about": "A real torchrun job started by gpucloud-node launch, as gpucloud run starts it on every node, "
                 "then resumed on empty disks from the checkpoint the launcher restores. The checkpoint store is a "
                 "file:// directory standing in for S3, and each node's IPv4 comes from GPUCLOUD_NODE_IPV4 (no "
                 "network, no IMDS where it was recorded). All nodes ran on one host: no traffic between hosts.",
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpus": listed_gpus(),
        "python": sys.version.split()[0],
        "attempts": attempts,
    }


def _node_environment(work: Path, node: str, index: int, count: int) -> dict[str, str]:
    """One node's own /run, /etc and checkpoint disk; with several nodes on one host, each its own GPU."""
    home = work / node
    if home.joinpath("checkpoints").is_dir():
        shutil.rmtree(home / "checkpoints")  # a replacement node starts with an empty disk
    home.mkdir(parents=True, exist_ok=True)
    (home / "node.json").write_text(json.dumps({"checkpoint_dir": str(home / "checkpoints")}), encoding="utf-8")
    environment = dict(
        os.environ,
        PYTHONPATH=str(REPOSITORY / "infra"),
        GPUCLOUD_ROOT=str(home / "root"),
        GPUCLOUD_NODE_IPV4=node,
        GPUCLOUD_NODE_CONFIG=str(home / "node.json"),
        # torchrun of the Python that runs this recording
        PATH=interpreter_path(),
    )
    if count > 1:
        environment["CUDA_VISIBLE_DEVICES"] = str(index)
    return environment


def _environment_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


def interpreter_path() -> str:
    """PATH with this interpreter's folder first, so the nodes' torchrun and gpucloud-node are its own."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def listed_gpus() -> list[str]:
    """The host's GPUs as `nvidia-smi -L` names them (none where it cannot run), for the record."""
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split(" (UUID")[0] for line in listed.stdout.splitlines() if line.startswith("GPU ")]


if __name__ == "__main__":
    raise SystemExit(main())
