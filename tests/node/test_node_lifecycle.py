"""`gate` and `drain` against the IMDSv2 stub and moto's Auto Scaling."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from gpucloud.node.cli import main
from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.lifecycle import (
    LifecycleError,
    checkpoint_argv,
    checkpoint_uri,
    drain,
    find_group_name,
    gate,
)
from gpucloud.node.nvidia import Expectations, check_gpus
from node_fakes import (
    GROUP,
    LAUNCH_HOOK,
    NO_WAIT,
    REGION,
    TERMINATE_HOOK,
    FakeNvidiaSmi,
    Reply,
    aws_client,
    recorded,
)

SPOT_PATH = "/latest/meta-data/spot/instance-action"
TARGET_STATE_PATH = "/latest/meta-data/autoscaling/target-lifecycle-state"
GROUP_TAG_PATH = "/latest/meta-data/tags/instance/aws:autoscaling:groupName"


def node_config(**changes) -> NodeConfig:
    return NodeConfig(
        region=REGION,
        launch_hook_name=LAUNCH_HOOK,
        terminate_hook_name=TERMINATE_HOOK,
        expected_gpu_count=1,
        expected_gpu_model="H100",
        poll_interval_s=5,
    ).replace(**changes)


def healthy_check():
    return check_gpus(
        Expectations(gpu_count=1, gpu_model="H100"), run=FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"))
    )


def unhealthy_check():
    return check_gpus(Expectations(gpu_count=1), run=FakeNvidiaSmi(query=Reply(timed_out=True)))


def ignore_sleep(seconds: float) -> None:
    pass


def health_status(instance_id: str) -> str:
    response = aws_client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance_id])
    return response["AutoScalingInstances"][0]["HealthStatus"]


def run_gate(config, stub, check):
    return gate(config, stub.client(), check, client_factory=aws_client, backoff=NO_WAIT, sleep=ignore_sleep)


def run_drain(config, stub, runner, sleep, max_polls):
    return drain(
        config,
        stub.client(),
        run=runner,
        client_factory=aws_client,
        backoff=NO_WAIT,
        sleep=sleep,
        max_polls=max_polls,
    )


class CheckpointRunner:
    """Records checkpoint commands; fails the first `failures` calls."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.calls: list[tuple[tuple[str, ...], dict[str, str]]] = []

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append((tuple(argv), dict(env or {})))
        failed = len(self.calls) <= self.failures
        return CommandResult(
            tuple(argv), returncode=1 if failed else 0, stderr="upload failed" if failed else ""
        )


def test_healthy_node_continues_the_launch_hook(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)

    assert run_gate(node_config(), metadata_stub, healthy_check) == 0

    assert lifecycle_actions.completed == [
        {"group": GROUP, "hook": LAUNCH_HOOK, "instance_id": gpu_group.instance_id, "result": "CONTINUE"}
    ]
    assert health_status(gpu_group.instance_id).upper() == "HEALTHY"


def test_unhealthy_node_abandons_the_launch_hook(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert [action["result"] for action in lifecycle_actions.completed] == ["ABANDON"]


def test_unhealthy_node_without_launch_hook_is_marked_unhealthy(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    aws_client("autoscaling").delete_lifecycle_hook(LifecycleHookName=LAUNCH_HOOK, AutoScalingGroupName=GROUP)

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert lifecycle_actions.completed == []
    assert health_status(gpu_group.instance_id).upper() == "UNHEALTHY"


def test_unhealthy_node_after_reboot_is_marked_unhealthy(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    lifecycle_actions.pending = False

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert health_status(gpu_group.instance_id).upper() == "UNHEALTHY"


def test_healthy_node_after_reboot_is_left_in_service(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    lifecycle_actions.pending = False

    assert run_gate(node_config(launch_hook_name=None), metadata_stub, healthy_check) == 0

    assert lifecycle_actions.completed == []
    assert health_status(gpu_group.instance_id).upper() == "HEALTHY"


def test_gate_without_metadata_cannot_report(aws, metadata_stub):
    with pytest.raises(LifecycleError) as error:
        run_gate(node_config(), metadata_stub, healthy_check)

    assert "instance-id" in str(error.value)


def test_group_name_comes_from_the_instance_tag_when_metadata_exposes_tags(gpu_group, metadata_stub):
    autoscaling = aws_client("autoscaling")
    metadata = metadata_stub.client()

    from_api = find_group_name(metadata, autoscaling, gpu_group.instance_id, NO_WAIT, lambda seconds: None)
    metadata_stub.routes[GROUP_TAG_PATH] = "tagged-group"
    from_tag = find_group_name(metadata, autoscaling, gpu_group.instance_id, NO_WAIT, lambda seconds: None)

    assert (from_api, from_tag) == (GROUP, "tagged-group")


def test_spot_notice_saves_checkpoint_then_completes_terminate_hook(
    gpu_group, lifecycle_actions, metadata_stub, tmp_path
):
    metadata_stub.serve_instance(gpu_group.instance_id)
    target_states = iter(["InService", "InService", "Terminated"])
    metadata_stub.routes[SPOT_PATH] = json.dumps({"action": "terminate", "time": "2026-11-22T08:00:00Z"})
    metadata_stub.routes[TARGET_STATE_PATH] = lambda: next(target_states)
    config = node_config(
        checkpoint_dir=str(tmp_path), checkpoint_bucket="ml-artifacts", checkpoint_prefix="ml/train/"
    )
    runner = CheckpointRunner()
    sleeps: list[float] = []

    status = run_drain(config, metadata_stub, runner, sleeps.append, max_polls=10)

    uri = f"s3://ml-artifacts/ml/train/checkpoints/{gpu_group.instance_id}/"
    assert status == 0
    assert [argv for argv, _ in runner.calls] == [("aws", "s3", "sync", "--no-progress", str(tmp_path), uri)]
    assert runner.calls[0][1]["GPUCLOUD_CHECKPOINT_URI"] == uri
    assert lifecycle_actions.completed == [
        {"group": GROUP, "hook": TERMINATE_HOOK, "instance_id": gpu_group.instance_id, "result": "CONTINUE"}
    ]
    assert sleeps == [5, 5]


def test_scale_in_saves_checkpoint_then_completes_terminate_hook(
    gpu_group, lifecycle_actions, metadata_stub, tmp_path
):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = "Terminated"
    runner = CheckpointRunner()
    config = node_config(checkpoint_dir=str(tmp_path), checkpoint_command=("save-checkpoint", "--now"))

    assert run_drain(config, metadata_stub, runner, ignore_sleep, max_polls=1) == 0

    assert runner.calls[0][0] == ("save-checkpoint", "--now")
    assert runner.calls[0][1]["GPUCLOUD_INSTANCE_ID"] == gpu_group.instance_id
    assert [action["hook"] for action in lifecycle_actions.completed] == [TERMINATE_HOOK]


def test_failed_checkpoint_is_retried_with_backoff_then_the_instance_is_released(
    gpu_group, lifecycle_actions, metadata_stub, tmp_path
):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = "Terminated"
    runner = CheckpointRunner(failures=2)
    sleeps: list[float] = []
    config = node_config(checkpoint_dir=str(tmp_path), checkpoint_bucket="ml-artifacts")

    run_drain(config, metadata_stub, runner, sleeps.append, max_polls=1)

    assert len(runner.calls) == 3
    assert sleeps == [0.001, 0.001]
    assert len(lifecycle_actions.completed) == 1


def test_checkpoint_that_never_succeeds_is_bounded(gpu_group, lifecycle_actions, metadata_stub, tmp_path):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = "Terminated"
    runner = CheckpointRunner(failures=100)
    config = node_config(checkpoint_dir=str(tmp_path), checkpoint_bucket="ml-artifacts")

    run_drain(config, metadata_stub, runner, ignore_sleep, max_polls=1)

    assert len(runner.calls) == NO_WAIT.attempts
    assert len(lifecycle_actions.completed) == 1


def test_no_notice_means_no_checkpoint_and_no_release(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = "InService"
    runner = CheckpointRunner()
    sleeps: list[float] = []

    run_drain(node_config(), metadata_stub, runner, sleeps.append, max_polls=3)

    assert runner.calls == []
    assert lifecycle_actions.completed == []
    assert sleeps == [5, 5, 5]


def test_spot_notice_outside_an_auto_scaling_group_finishes_after_the_checkpoint(
    aws, metadata_stub, tmp_path
):
    metadata_stub.serve_instance("i-0123456789abcdef0")
    metadata_stub.routes[SPOT_PATH] = json.dumps({"action": "stop", "time": "2026-11-22T08:00:00Z"})
    runner = CheckpointRunner()
    config = node_config(terminate_hook_name=None, checkpoint_dir=str(tmp_path), checkpoint_bucket="b")

    assert run_drain(config, metadata_stub, runner, ignore_sleep, max_polls=5) == 0
    assert len(runner.calls) == 1


def test_drain_keeps_polling_through_metadata_outages(gpu_group, lifecycle_actions, metadata_stub, tmp_path):
    metadata_stub.serve_instance(gpu_group.instance_id)
    metadata_stub.routes[TARGET_STATE_PATH] = "Terminated"

    def outage_starts_at_the_first_poll():
        if not metadata_stub.requests_failed:
            # Enough failed reads to defeat two polls, each giving up after NO_WAIT's attempts.
            metadata_stub.failing_gets = 2 * NO_WAIT.attempts
        return None

    metadata_stub.routes[SPOT_PATH] = outage_starts_at_the_first_poll
    config = node_config(checkpoint_dir=str(tmp_path / "absent"), checkpoint_bucket="b")
    sleeps: list[float] = []

    status = run_drain(config, metadata_stub, CheckpointRunner(), sleeps.append, max_polls=10)

    assert status == 0
    assert metadata_stub.requests_failed == 2 * NO_WAIT.attempts
    assert sleeps.count(config.poll_interval_s) == 2, "polled again after each failed poll"
    assert len(lifecycle_actions.completed) == 1


def test_checkpoint_destination_follows_the_write_prefix():
    config = NodeConfig(
        checkpoint_bucket="bucket", checkpoint_prefix="/team/run 1/", checkpoint_dir="/scratch/ckpt"
    )

    assert checkpoint_uri(config, "i-1") == "s3://bucket/team/run 1/checkpoints/i-1/"
    assert checkpoint_argv(config, "i-1") == [
        "aws",
        "s3",
        "sync",
        "--no-progress",
        "/scratch/ckpt",
        "s3://bucket/team/run 1/checkpoints/i-1/",
    ]
    assert checkpoint_uri(NodeConfig(checkpoint_bucket="bucket"), "i-1") == "s3://bucket/checkpoints/i-1/"
    assert checkpoint_argv(NodeConfig(), "i-1") is None


def test_metadata_requires_a_token_and_renews_an_expired_one(metadata_stub):
    metadata_stub.serve_instance("i-0abc")
    metadata = metadata_stub.client()

    with pytest.raises(urllib.error.HTTPError) as without_token:
        urllib.request.urlopen(metadata_stub.endpoint + "/latest/meta-data/instance-id", timeout=2)
    first = metadata.instance_id()
    metadata_stub.expire_tokens()
    second = metadata.instance_id()

    assert without_token.value.code == 401
    assert (first, second) == ("i-0abc", "i-0abc")
    assert metadata_stub.tokens_issued == 2
    assert ("GET", "/latest/meta-data/instance-id", 401) in metadata_stub.requests


def test_metadata_404_means_absent_and_spot_notice_is_parsed(metadata_stub):
    metadata = metadata_stub.client()
    assert metadata.spot_instance_action() is None
    assert metadata.target_lifecycle_state() is None

    metadata_stub.routes[SPOT_PATH] = '{"action": "terminate", "time": "2026-11-22T08:00:00Z"}'
    assert metadata.spot_instance_action() == {"action": "terminate", "time": "2026-11-22T08:00:00Z"}


def test_metadata_ignores_http_proxies_from_the_environment(metadata_stub, monkeypatch):
    metadata_stub.serve_instance("i-0abc")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")

    assert metadata_stub.client().instance_id() == "i-0abc"


def test_cli_drain_reads_metadata_from_the_overridden_endpoint(metadata_stub, tmp_path, monkeypatch):
    metadata_stub.serve_instance("i-0abc")
    metadata_stub.routes[TARGET_STATE_PATH] = "InService"
    (tmp_path / "node.json").write_text(json.dumps({"region": REGION, "poll_interval_s": 0.001}))
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))
    monkeypatch.setenv("GPUCLOUD_IMDS_ENDPOINT", metadata_stub.endpoint)

    assert main(["drain", "--max-polls", "2"]) == 0
    assert main(["--imds-endpoint", metadata_stub.endpoint, "drain", "--max-polls", "1"]) == 0

    polled = [path for method, path, status in metadata_stub.requests if status == 200]
    assert polled.count(TARGET_STATE_PATH) == 3
