"""The launcher's recorded GPU run (tests/fixtures/gpu/torchrun_launcher.json, made on an H100 by
tests/node/gpu/record_torchrun.py) says what it must, and the same recording script still runs a
real torchrun job through the launcher here, on the CPU with gloo, so neither can rot.

One GPU on one node: the recording shows the launcher's environment reaching torchrun and NCCL, a
checkpoint written, synced, restored on an empty disk and resumed; it cannot show traffic between
nodes. The multi-node rendezvous values are tested in test_launcher.py and tests/ops/.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "fixtures" / "gpu" / "torchrun_launcher.json"
TWO_NODES = HERE.parent / "fixtures" / "gpu" / "torchrun_launcher_two_nodes.json"
RECORDER = HERE / "gpu" / "record_torchrun.py"
RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES", "NPROC_PER_NODE", "WORLD_SIZE",
              "GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT", "GPUCLOUD_HOSTFILE", "GPUCLOUD_CHECKPOINT_DIR",
              "GPUCLOUD_CHECKPOINT_URI")


def check_recording(record: dict, backend: str, steps: int, fail_at: int, nodes: int = 1) -> None:
    """What every recording must show: attempt 0 fails after its checkpoint at `fail_at` and each
    launcher passes torchrun's failure on; attempt 1 restores that checkpoint onto empty
    directories, resumes from it, and finishes with status 0 on every node."""
    first, second = record["attempts"]
    assert [first["attempt"], second["attempt"]] == [0, 1]
    assert [[node["exit_status"] for node in attempt["nodes"]] for attempt in (first, second)] == [[1] * nodes, [0] * nodes]
    for attempt in (first, second):
        worker = attempt["worker"]
        assert [node["command_environment"]["NODE_RANK"] for node in attempt["nodes"]] == [str(rank) for rank in range(nodes)]
        for node in attempt["nodes"]:
            environment = node["command_environment"]
            assert set(RENDEZVOUS) <= set(environment)
            assert environment["GPUCLOUD_ATTEMPT"] == str(attempt["attempt"])
            assert environment["NNODES"] == str(nodes)
            assert environment["MASTER_ADDR"] == attempt["nodes"][0]["node_ipv4"]
            assert int(environment["WORLD_SIZE"]) == nodes * int(environment["NPROC_PER_NODE"])
            assert node["hostfile"] == "".join(f"{other['node_ipv4']} slots={environment['NPROC_PER_NODE']}\n"
                                               for other in attempt["nodes"])
            restored = [line for line in node["launcher_log"] if line.startswith("INFO gpucloud.node.launcher: restored")]
            assert restored == ([] if attempt["attempt"] == 0 else [restored[0]]) and (not restored or "restored 1 file(s)" in restored[0])
        assert worker["worker_environment"]["WORLD_SIZE"] == attempt["nodes"][0]["command_environment"]["WORLD_SIZE"]
        # c10d hands out global ranks in arrival order, so rank 0 (the report's writer) may run on any node.
        names = ("GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT", "GPUCLOUD_CHECKPOINT_DIR", "NNODES", "NODE_RANK")
        assert {name: worker["worker_environment"][name] for name in names} in [
            {name: node["command_environment"][name] for name in names} for node in attempt["nodes"]]
        assert "--attempt" in attempt["launcher_argv"] and "--command-b64" in attempt["launcher_argv"]
        assert attempt["command"][:3] == ["torchrun", "--nnodes", "$NNODES"]
        assert "c10d" in attempt["command"] and "$MASTER_ADDR:$MASTER_PORT" in attempt["command"]
        for node in attempt["nodes"]:
            environment = node["command_environment"]
            started = f"--nnodes {environment['NNODES']} --nproc-per-node {environment['NPROC_PER_NODE']} --node-rank {environment['NODE_RANK']}"
            assert any(started in line for line in node["launcher_log"])
        assert worker["backend"] == backend
        assert attempt["store_after"] == ["tiny.pt"]
    assert first["worker"]["exit_status"] == 17 and first["worker"]["resumed_from_step"] is None
    assert [loss["step"] for loss in first["worker"]["losses"]] == list(range(fail_at))
    assert second["worker"]["resumed_from_step"] == fail_at
    assert [loss["step"] for loss in second["worker"]["losses"]] == list(range(steps))
    assert second["worker"]["losses"][:fail_at] == first["worker"]["losses"]
    losses = [loss["loss"] for loss in second["worker"]["losses"]]
    assert losses[-1] < losses[fail_at] < losses[0]


def check_gpu_recording(record: dict, nodes: int) -> None:
    check_recording(record, "nccl", steps=20, fail_at=10, nodes=nodes)
    assert record["gpus"] and all("H100" in gpu or "H200" in gpu for gpu in record["gpus"])
    for attempt in record["attempts"]:
        worker = attempt["worker"]
        assert "H100" in worker["device"] or "H200" in worker["device"]
        assert worker["nccl"] and worker["cuda"] and worker["torch"].startswith("2.")


def test_the_recorded_gpu_run_used_nccl_and_resumed_from_its_checkpoint():
    record = json.loads(FIXTURE.read_text())

    check_gpu_recording(record, nodes=1)
    assert record["recorded_by"] == "python3 tests/node/gpu/record_torchrun.py --backend nccl --out tests/fixtures/gpu/torchrun_launcher.json"
    for attempt in record["attempts"]:
        # No --gpus-per-node: the launcher counted the GPUs with nvidia-smi -L.
        assert "--gpus-per-node" not in attempt["launcher_argv"]
        assert attempt["nodes"][0]["command_environment"]["NPROC_PER_NODE"] == str(len(record["gpus"]))


def test_the_recorded_two_node_run_on_one_host_met_at_the_rendezvous_with_ranks_from_the_addresses():
    record = json.loads(TWO_NODES.read_text())

    check_gpu_recording(record, nodes=2)
    assert record["recorded_by"] == ("python3 tests/node/gpu/record_torchrun.py --backend nccl --nodes 127.0.0.1,127.0.0.2 "
                                     "--gpus-per-node 1 --out tests/fixtures/gpu/torchrun_launcher_two_nodes.json")
    assert [node["node_ipv4"] for node in record["attempts"][1]["nodes"]] == ["127.0.0.1", "127.0.0.2"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_recording_script_runs_torchrun_through_the_launcher_on_the_cpu(tmp_path):
    out = tmp_path / "cpu.json"
    command = [sys.executable, str(RECORDER), "--backend", "gloo", "--gpus-per-node", "1", "--steps", "4",
               "--checkpoint-every", "2", "--fail-at-step", "2", "--port", str(free_port()), "--out", str(out)]

    result = subprocess.run(command, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    check_recording(json.loads(out.read_text()), "gloo", steps=4, fail_at=2)
