"""The node records each phase of its own boot (readings beside the watch's, a record, a log line);
the gate pulls the images of a node bound for the warm pool before it completes the hook; a
container's weights are copied from the bucket or shown in place, read-only at /weights."""

from __future__ import annotations

import json
import logging
import re

import pytest
from gpucloud.node import boot_phases, weights
from gpucloud.node.boot import MOUNT_UNIT, boot
from gpucloud.node.commands import CommandResult
from gpucloud.node.containers import container_environment, docker_run_argv, stage_weights
from gpucloud.node.prepull import prepull
from node_fakes import LAUNCH_HOOK, NO_WAIT, REGION, aws_client
from test_node_lifecycle import TARGET_STATE_PATH, healthy_check, node_config, run_gate

from gpucloud.node.lifecycle import boto3_client, gate


@pytest.fixture
def phase_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(boot_phases.DIRECTORY_ENV, str(tmp_path / "phases"))
    return tmp_path / "phases"


class Runner:
    def __init__(self):
        self.calls = []

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append(list(argv))
        return CommandResult(tuple(argv), returncode=0)


def readings(phase_dir) -> dict[tuple[str, str], float]:
    text = (phase_dir / "gpucloud_boot_phases.prom").read_text()
    found = {}
    for name, labels, value in re.findall(r"^(gpucloud_boot_phase_\w+)\{([^}]*)\} (\S+)$", text, re.M):
        found[(name, labels)] = float(value)
    return found


def test_each_phase_is_a_reading_and_a_record_in_boot_order(phase_dir, caplog):
    caplog.set_level(logging.INFO)
    boot_phases.record("pull", 130.0, 250.5, container="server")
    boot_phases.record("gate", 100.0, 130.0)
    found = readings(phase_dir)
    assert found[("gpucloud_boot_phase_seconds", 'phase="gate"')] == 30.0
    assert found[("gpucloud_boot_phase_seconds", 'phase="pull",container="server"')] == 120.5
    assert found[("gpucloud_boot_phase_end_timestamp_seconds", 'phase="gate"')] == 130.0
    text = (phase_dir / "gpucloud_boot_phases.prom").read_text()
    assert text.index('phase="gate"') < text.index('phase="pull"')
    assert json.loads((phase_dir / "boot-phases.json").read_text())["pull:server"] == {"start": 130.0, "end": 250.5}
    assert "boot phase pull (server): 120.5 s" in caplog.text
    assert boot_phases.where_it_is(boot_phases.read()).startswith("pull:server done at 00:04:10Z (gate 30 s, pull:server 120 s)")


def test_an_unknown_phase_is_refused(phase_dir):
    with pytest.raises(ValueError, match="not a boot phase"):
        boot_phases.record("coffee", 0, 1)


def test_boot_records_the_boot_agent_and_mount_phases(phase_dir, tmp_path):
    source = tmp_path / "bundle"
    (source / "boot").mkdir(parents=True)
    steps = [["systemctl", "daemon-reload"], ["systemctl", "start", "gpucloud-node-tune.service", MOUNT_UNIT],
             ["systemctl", "start", "--no-block", "gpucloud-node-gate.service"]]
    (source / "boot" / "manifest.json").write_text(json.dumps({"files": [], "steps": steps}))
    ticks = iter([1000.0, 1010.0, 1012.0, 1012.0, 1100.0, 1101.0])
    assert boot(Runner(), source=source, root=tmp_path / "root", clock=lambda: next(ticks)) == 0
    phases = boot_phases.read()
    assert phases["agent"] == {"start": 1000.0, "end": 1012.0}
    assert phases["mount"] == {"start": 1012.0, "end": 1100.0}
    assert phases["boot"]["end"] == 1000.0 and phases["boot"]["start"] > 0, "from the kernel's btime"


def test_the_mount_phase_is_the_storage_unit_the_bundle_starts():
    from gpucloud.userdata.layout import STORAGE_UNIT

    assert MOUNT_UNIT == STORAGE_UNIT


@pytest.mark.node_aws_calls("launchHook")
def test_the_gate_is_a_phase(gpu_group, lifecycle_actions, metadata_stub, phase_dir):
    metadata_stub.serve_instance(gpu_group.instance_id)
    assert run_gate(node_config(), metadata_stub, healthy_check) == 0
    assert ("gpucloud_boot_phase_seconds", 'phase="gate"') in readings(phase_dir)


@pytest.mark.node_aws_calls("launchHook")
@pytest.mark.parametrize(("target", "pulled"), [("Warmed:Stopped", True), ("Warmed:Hibernated", True), ("InService", False)])
def test_a_node_bound_for_the_warm_pool_pulls_before_it_completes_the_hook(
        gpu_group, lifecycle_actions, metadata_stub, phase_dir, target, pulled):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = target
    seen = []

    def prepare():
        seen.append(list(lifecycle_actions.completed))

    assert gate(node_config(), metadata_stub.client(), healthy_check, client_factory=aws_client,
                backoff=NO_WAIT, sleep=lambda _s: None, prepare_for_pool=prepare) == 0
    assert seen == ([[]] if pulled else []), "pulled while the hook was still pending"
    assert [action["hook"] for action in lifecycle_actions.completed] == [LAUNCH_HOOK]


def test_prepull_pulls_each_image_the_services_document_asks_for(tmp_path, phase_dir):
    document = {"region": "us-east-1", "prepull_images": True, "containers": [
        {"name": "server", "image": "vllm/vllm-openai:v0.6.3", "ecr_region": None}]}
    path = tmp_path / "services.json"
    path.write_text(json.dumps(document))
    runner = Runner()
    assert prepull(runner, lambda region: None, str(path))
    assert runner.calls == [["docker", "pull", "--quiet", "vllm/vllm-openai:v0.6.3"]]
    assert "pull:server" in boot_phases.read()
    path.write_text(json.dumps({**document, "prepull_images": False}))
    runner = Runner()
    assert prepull(runner, lambda region: None, str(path)) and runner.calls == []


def test_weights_reach_the_container_read_only_at_a_fixed_path():
    container = {"name": "server", "image": "server:1", "port": 8000, "gpus": "all",
                 "weights": {"bucket": "b", "prefix": "models/llm/llama/"}}
    argv = docker_run_argv(container)
    assert argv[argv.index("--volume") + 1] == "/scratch/weights/server:/weights:ro"
    assert container_environment(container, "us-east-1")["GPUCLOUD_WEIGHTS_DIR"] == "/weights"
    in_place = {**container, "weights": {**container["weights"], "path": "/fsx/models/llm/llama"}}
    argv = docker_run_argv(in_place)
    assert argv[argv.index("--volume") + 1] == "/fsx/models/llm/llama:/weights:ro"
    assert "--volume" not in docker_run_argv({k: v for k, v in container.items() if k != "weights"})


@pytest.mark.node_aws_calls("containerWeights")
def test_weights_are_copied_once_from_the_project_prefix(aws, tmp_path, phase_dir, monkeypatch):
    s3 = aws_client("s3")
    s3.create_bucket(Bucket="example-model-artifacts")
    for key, body in (("models/llm/llama/config.json", b"{}"), ("models/llm/llama/shards/0.safetensors", b"x" * 4096),
                      ("models/llm/other/skip.bin", b"no")):
        s3.put_object(Bucket="example-model-artifacts", Key=key, Body=body)
    monkeypatch.setattr(weights, "SCRATCH_WEIGHTS", str(tmp_path / "{}"))
    # As the node's services config holds it (components/node_services.py): through the container's staging, so
    # the recording finds the weights' bucket and prefix (access_calls.json: `${dataBucket}`, `${readPrefix}`).
    container = {"name": "llm", "weights": {"bucket": "example-model-artifacts", "prefix": "models/llm/llama/"}}
    client = lambda service: boto3_client(service, REGION)  # noqa: E731  # node code makes it: its transfer threads count
    assert stage_weights(container, client) == 4098
    target = tmp_path / "llm"
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "config.json", "shards/0.safetensors"]
    assert stage_weights(container, client) == 0, "kept at the same size"


def test_the_node_command_says_where_its_boot_is(phase_dir, capsys):
    from gpucloud.node.cli import main

    boot_phases.record("gate", 100.0, 130.0)
    assert main(["phases"]) == 0
    assert capsys.readouterr().out.strip() == "gate done at 00:02:10Z (gate 30 s)"
