"""The two halves of `gpucloud run` meet: the stack's job document, run by bash the way SSM Agent
runs an aws:runShellScript step (each parameter as an `SSM_<name>` variable, as `interpolationType:
ENV_VAR` asks), with the parameters `gpucloud run` sends, drives the real node launcher."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpucloud.documents.jobs import LAUNCHER, job_document
from gpucloud.ops.jobs import Job
from gpucloud.ops.nodes import Node

NODES = [Node("i-0aaa", "10.0.1.5"), Node("i-0bbb", "10.0.1.17")]
SHOW = "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], 'env': {k: os.environ[k] for k in %r}})); sys.exit(3)"
NAMES = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES", "NPROC_PER_NODE", "WORLD_SIZE", "GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT")


@pytest.fixture
def node(tmp_path: Path) -> dict[str, str]:
    """A node's environment: the launcher behind the document's path, its root and its address."""
    launcher = tmp_path / "gpucloud-node"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m gpucloud.node "$@"\n')
    launcher.chmod(0o755)
    return {"PATH": os.environ["PATH"], "GPUCLOUD_ROOT": str(tmp_path / "root"), "GPUCLOUD_NODE_IPV4": NODES[1].private_ip,
            "LAUNCHER": str(launcher)}


def run_document(parameters: dict[str, list[str]], node: dict[str, str]) -> subprocess.CompletedProcess[str]:
    step = job_document()["mainSteps"][0]["inputs"]["runCommand"]
    script = "\n".join(step).replace(LAUNCHER, node["LAUNCHER"])
    environment = {key: value for key, value in node.items() if key != "LAUNCHER"}
    environment.update({f"SSM_{name}": values[0] for name, values in parameters.items()})
    return subprocess.run(["bash", "-c", script], env=environment, capture_output=True, text=True, timeout=60)


def test_the_document_starts_the_launcher_with_the_rendezvous_run_sends(node: dict[str, str]) -> None:
    job = Job(job_id="train-20261125190000-ab12", stack="vision-train", group="train", group_name="gpu-cloud-vision-train-train",
              nodes=2, command=[sys.executable, "-c", SHOW % (NAMES,), "--rank", "$NODE_RANK"], gpus_per_node=2)

    finished = run_document(job.parameters(attempt=0, nodes=NODES), node)

    assert finished.returncode == 3, finished.stderr
    shown = json.loads(finished.stdout.strip().splitlines()[-1])
    assert shown["argv"] == ["--rank", "1"]
    assert shown["env"] == {
        "MASTER_ADDR": "10.0.1.5", "MASTER_PORT": "29500", "NODE_RANK": "1", "NNODES": "2", "NPROC_PER_NODE": "2",
        "WORLD_SIZE": "4", "GPUCLOUD_JOB_ID": job.job_id, "GPUCLOUD_ATTEMPT": "0",
    }
    hostfile = Path(node["GPUCLOUD_ROOT"], "run/gpucloud/jobs", job.job_id, "hostfile").read_text().split("\n")
    assert hostfile[:2] == ["10.0.1.5 slots=2", "10.0.1.17 slots=2"]


def test_a_node_outside_the_list_runs_nothing(node: dict[str, str]) -> None:
    job = Job(job_id="train-20261125190000-cd34", stack="vision-train", group="train", group_name="gpu-cloud-vision-train-train",
              nodes=1, command=[sys.executable, "-c", "print('ran')"], gpus_per_node=1)

    finished = run_document(job.parameters(attempt=0, nodes=NODES[:1]), node)

    assert finished.returncode == 64
    assert "ran" not in finished.stdout


def test_the_stop_action_reaches_launch_stop(node: dict[str, str]) -> None:
    finished = run_document({"action": ["launch-stop"], "job": ["train-20261125190000-ef56"]}, node)

    assert finished.returncode == 0, finished.stderr


def test_the_preflight_actions_reach_the_node_commands_with_the_job_s_own_parameters(node: dict[str, str], tmp_path: Path) -> None:
    """The job supervisor's Preflight step sends the job's parameters with another action; the
    preflight takes its level from the action and leaves the job's command and checkpoint URI alone.
    A node with no nvidia-smi and no torchrun fails its preflight with both reasons, as JSON."""
    from gpucloud.node.launcher import encode_command
    from gpucloud.node.preflight import RESULT_MARKER

    config = tmp_path / "node.json"
    config.write_text(json.dumps({"checkpoint_dir": str(tmp_path / "checkpoints"), "nvidia_smi": "/nonexistent/nvidia-smi",
                                  "imds_endpoint": "http://127.0.0.1:9"}))
    node = {**node, "GPUCLOUD_NODE_CONFIG": str(config), "GPUCLOUD_INSTANCE_TYPE": "g5.2xlarge",
            "PATH": f"{tmp_path / 'no-torch'}:/usr/bin:/bin"}
    job = Job(job_id="train-20261128190000-ab12", stack="vision-train", group="train", group_name="gpu-cloud-vision-train-train",
              nodes=2, command=["torchrun", "train.py"], gpus_per_node=1, checkpoint_uri="s3://bucket/team/jobs/train-20261128190000-ab12/")
    results = {}
    # 1: this node's own checks failed; 3: the set's test could not run (node/preflight_search.py EXIT_*)
    for action, status in (("preflight", 1), ("preflight-fabric", 3), ("preflight-full", 1)):
        finished = run_document({**job.parameters(attempt=0, nodes=NODES), "action": [action]}, node)
        assert finished.returncode == status, finished.stderr
        results[action] = json.loads(finished.stdout.splitlines()[-1].removeprefix(RESULT_MARKER))

    assert results["preflight"]["node"] == "10.0.1.17" and results["preflight"]["set"] == ["10.0.1.5", "10.0.1.17"]
    assert [(result["checks"], result["level"]) for result in results.values()] == [
        (["local", "fabric"], "quick"), (["fabric"], "quick"), (["local", "fabric"], "full")]
    assert results["preflight"]["problems"] == ["GPU gate: /nonexistent/nvidia-smi not found"]
    assert results["preflight"]["set_problems"][0].startswith("torchrun not found: no PyTorch on this node")

    replaced = run_document({"action": ["preflight-replace"], "job": [job.job_id],
                             "commandB64": [encode_command(["--reason", "slow fabric"])]}, node)
    assert "cannot identify this instance" in replaced.stderr, "it asks the metadata service (here a closed port)"

    statuses = [["i-0aaa=2", "i-0bbb=2"]]  # two nodes, slow together: no partner to bisect with
    decided = run_document({"action": ["preflight-decide"], "job": [job.job_id],
                            "nodes": [",".join(node.private_ip for node in NODES)],
                            "commandB64": [encode_command(["--instance-ids", json.dumps(["i-0aaa", "i-0bbb"]),
                                                           "--rounds", json.dumps(statuses)])]}, node)
    assert decided.returncode == 0, decided.stderr
    assert not decided.stdout.endswith("\n"), "the supervisor parses the whole stdout as JSON"
    verdict = json.loads(decided.stdout)
    assert verdict["action"] == "stop" and "the fabric or NCCL's setup" in verdict["reason"]
