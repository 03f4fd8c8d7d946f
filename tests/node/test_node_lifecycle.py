"""`gate` and `drain` against the IMDSv2 stub and moto's Auto Scaling."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
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
    heartbeat,
    identify,
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
        group_name=GROUP,
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


@pytest.mark.node_aws_calls("launchHook")
def test_healthy_node_continues_the_launch_hook(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)

    assert run_gate(node_config(), metadata_stub, healthy_check) == 0

    assert lifecycle_actions.completed == [
        {"group": GROUP, "hook": LAUNCH_HOOK, "instance_id": gpu_group.instance_id, "result": "CONTINUE"}
    ]
    assert health_status(gpu_group.instance_id).upper() == "HEALTHY"


@pytest.mark.node_aws_calls("launchHook")
def test_unhealthy_node_abandons_the_launch_hook(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert [action["result"] for action in lifecycle_actions.completed] == ["ABANDON"]


@pytest.mark.node_aws_calls("launchHook")
def test_unhealthy_node_without_launch_hook_is_marked_unhealthy(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    aws_client("autoscaling").delete_lifecycle_hook(LifecycleHookName=LAUNCH_HOOK, AutoScalingGroupName=GROUP)

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert lifecycle_actions.completed == []
    assert health_status(gpu_group.instance_id).upper() == "UNHEALTHY"


@pytest.mark.node_aws_calls("launchHook")
def test_unhealthy_node_after_reboot_is_marked_unhealthy(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    lifecycle_actions.pending = False

    assert run_gate(node_config(), metadata_stub, unhealthy_check) == 1

    assert health_status(gpu_group.instance_id).upper() == "UNHEALTHY"


@pytest.mark.node_aws_calls("launchHook")
def test_healthy_node_after_reboot_is_left_in_service(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    lifecycle_actions.pending = False

    assert run_gate(node_config(launch_hook_name=None), metadata_stub, healthy_check) == 0

    assert lifecycle_actions.completed == []
    assert health_status(gpu_group.instance_id).upper() == "HEALTHY"


@pytest.mark.node_aws_calls("launchHook")
def test_node_that_turns_healthy_on_a_later_boot_check_continues(gpu_group, lifecycle_actions, metadata_stub):
    """A slow driver load or fabric manager start must not cost the node its place."""
    metadata_stub.serve_instance(gpu_group.instance_id)
    checks = iter([unhealthy_check, unhealthy_check, healthy_check])
    sleeps: list[float] = []

    status = gate(
        node_config(), metadata_stub.client(), lambda: next(checks)(), client_factory=aws_client, backoff=NO_WAIT, sleep=sleeps.append
    )

    assert status == 0
    assert [action["result"] for action in lifecycle_actions.completed] == ["CONTINUE"]
    assert sleeps == [15, 30]


@pytest.mark.node_aws_calls("launchHook")
def test_node_unhealthy_on_every_boot_check_is_abandoned_after_the_last(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    checks: list[str] = []
    sleeps: list[float] = []

    def count_checks():
        checks.append("check")
        return unhealthy_check()

    status = gate(node_config(), metadata_stub.client(), count_checks, client_factory=aws_client, backoff=NO_WAIT, sleep=sleeps.append)

    assert status == 1
    assert len(checks) == node_config().boot_check_attempts == 4
    assert sleeps == [15, 30, 60]
    assert [action["result"] for action in lifecycle_actions.completed] == ["ABANDON"]


def test_region_comes_from_metadata_even_when_the_config_names_another(metadata_stub, caplog):
    metadata_stub.serve_instance("i-0abc", region="eu-west-1", zone="eu-west-1a")

    assert identify(node_config(region="us-east-1"), metadata_stub.client()) == ("i-0abc", "eu-west-1")
    assert "node config names region us-east-1, but this instance runs in eu-west-1" in caplog.text


def test_region_from_the_config_serves_when_metadata_cannot_tell(metadata_stub):
    metadata_stub.serve_instance("i-0abc")
    del metadata_stub.routes["/latest/meta-data/placement/region"]

    assert identify(node_config(region="us-west-2"), metadata_stub.client()) == ("i-0abc", "us-west-2")
    with pytest.raises(LifecycleError):
        identify(node_config(region=None), metadata_stub.client())


def run_heartbeat(config, stub, sleep, clock=None):
    return heartbeat(
        config, stub.client(), client_factory=aws_client, backoff=NO_WAIT, sleep=sleep, clock=clock or (lambda: 0.0)
    )


@pytest.mark.node_aws_calls("launchHook")
def test_launch_action_is_kept_alive_at_a_third_of_the_hook_timeout_until_the_gate_completes_it(
    gpu_group, lifecycle_actions, metadata_stub
):
    metadata_stub.serve_instance(gpu_group.instance_id)
    sleeps: list[float] = []

    def storage_takes_three_beats(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            run_gate(node_config(), metadata_stub, healthy_check)

    assert run_heartbeat(node_config(), metadata_stub, storage_takes_three_beats) == 0

    assert lifecycle_actions.heartbeats == [
        {"group": GROUP, "hook": LAUNCH_HOOK, "instance_id": gpu_group.instance_id}
    ] * 3
    assert sleeps == [300, 300, 300], "the fixture's hooks time out after 900 s"
    assert [action["result"] for action in lifecycle_actions.completed] == ["CONTINUE"]


@pytest.mark.node_aws_calls("launchHook")
def test_heartbeats_stop_at_the_limit_so_a_node_that_never_gets_ready_is_abandoned(
    gpu_group, lifecycle_actions, metadata_stub
):
    metadata_stub.serve_instance(gpu_group.instance_id)
    now = [0.0]

    def pass_time(seconds: float) -> None:
        now[0] += seconds

    run_heartbeat(node_config(launch_heartbeat_limit_s=1000), metadata_stub, pass_time, clock=lambda: now[0])

    assert len(lifecycle_actions.heartbeats) == 4, "at 0, 300, 600 and 900 s"
    assert lifecycle_actions.completed == []


@pytest.mark.node_aws_calls("launchHook")
def test_no_heartbeat_without_a_launch_hook(gpu_group, lifecycle_actions, metadata_stub):
    metadata_stub.serve_instance(gpu_group.instance_id)
    aws_client("autoscaling").delete_lifecycle_hook(LifecycleHookName=LAUNCH_HOOK, AutoScalingGroupName=GROUP)

    assert run_heartbeat(node_config(), metadata_stub, ignore_sleep) == 0
    assert run_heartbeat(node_config(launch_hook_name=None), metadata_stub, ignore_sleep) == 0
    assert lifecycle_actions.heartbeats == []


def test_gate_without_metadata_cannot_report(aws, metadata_stub):
    with pytest.raises(LifecycleError) as error:
        run_gate(node_config(), metadata_stub, healthy_check)

    assert "instance-id" in str(error.value)


@pytest.mark.node_aws_calls("launchHook")
def test_group_name_comes_from_the_instance_tag_when_metadata_exposes_tags(gpu_group, metadata_stub):
    autoscaling = aws_client("autoscaling")
    metadata = metadata_stub.client()

    from_api = find_group_name(metadata, autoscaling, gpu_group.instance_id, NO_WAIT, lambda seconds: None)
    metadata_stub.routes[GROUP_TAG_PATH] = "tagged-group"
    from_tag = find_group_name(metadata, autoscaling, gpu_group.instance_id, NO_WAIT, lambda seconds: None)

    assert (from_api, from_tag) == (GROUP, "tagged-group")


@pytest.mark.node_aws_calls("drain")
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

    uri = f"s3://ml-artifacts/ml/train/checkpoints/{GROUP}/{gpu_group.instance_id}/"
    sync = (sys.executable, "-m", "gpucloud.node", "sync-checkpoint", "--region", REGION, str(tmp_path), uri)
    assert status == 0
    assert [argv for argv, _ in runner.calls] == [sync]
    assert runner.calls[0][1]["GPUCLOUD_CHECKPOINT_URI"] == uri
    assert lifecycle_actions.completed == [
        {"group": GROUP, "hook": TERMINATE_HOOK, "instance_id": gpu_group.instance_id, "result": "CONTINUE"}
    ]
    assert sleeps == [5, 5]


@pytest.mark.node_aws_calls("drain")
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


@pytest.mark.node_aws_calls("drain")
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


@pytest.mark.node_aws_calls("drain")
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


@pytest.mark.node_aws_calls("drain")
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


def test_checkpoint_destination_is_per_group_and_instance_under_the_write_prefix():
    config = NodeConfig(
        group_name="gpu-cloud-ml-train",
        checkpoint_bucket="bucket",
        checkpoint_prefix="/team/run 1/",
        checkpoint_dir="/scratch/ckpt",
    )

    assert checkpoint_uri(config, "i-1") == "s3://bucket/team/run 1/checkpoints/gpu-cloud-ml-train/i-1/"
    assert checkpoint_argv(config, "i-1", "eu-west-1")[-4:] == [
        "--region",
        "eu-west-1",
        "/scratch/ckpt",
        "s3://bucket/team/run 1/checkpoints/gpu-cloud-ml-train/i-1/",
    ]
    assert checkpoint_uri(NodeConfig(checkpoint_bucket="bucket"), "i-1") == "s3://bucket/checkpoints/i-1/"
    assert checkpoint_argv(NodeConfig(), "i-1", "eu-west-1") is None


def test_configured_checkpoint_command_is_run_as_given(tmp_path):
    config = NodeConfig(checkpoint_bucket="bucket", checkpoint_command=("save", "$(reboot)", "a b"))

    assert checkpoint_argv(config, "i-1", REGION) == ["save", "$(reboot)", "a b"]


@pytest.mark.node_aws_calls("checkpointToS3")
def test_default_checkpoint_syncs_new_and_changed_files_with_boto3_alone(aws, tmp_path, monkeypatch, caplog):
    s3 = aws_client("s3")
    s3.create_bucket(Bucket="ml-artifacts")
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "step-1").mkdir(parents=True)
    (checkpoints / "step-1" / "model.pt").write_bytes(b"weights 1")
    (checkpoints / "latest").write_text("step-1")
    (tmp_path / "node.json").write_text("{}")
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))
    monkeypatch.setenv("PATH", "/nonexistent")  # no aws CLI to fall back on
    uri = "s3://ml-artifacts/runs/checkpoints/g/i-1/"
    sync = ["sync-checkpoint", "--region", REGION, str(checkpoints), uri]

    caplog.set_level(logging.INFO)
    assert main(sync) == 0
    (checkpoints / "latest").write_text("step-2")
    os.utime(checkpoints / "latest", (time.time() + 60,) * 2)
    assert main(sync) == 0

    listed = s3.list_objects_v2(Bucket="ml-artifacts")["Contents"]
    stored = {item["Key"]: s3.get_object(Bucket="ml-artifacts", Key=item["Key"])["Body"].read() for item in listed}
    assert stored == {
        "runs/checkpoints/g/i-1/latest": b"step-2",
        "runs/checkpoints/g/i-1/step-1/model.pt": b"weights 1",
    }
    assert [record.getMessage() for record in caplog.records if "uploaded" in record.getMessage()] == [
        f"uploaded 2 file(s) to {uri}",
        f"uploaded 1 file(s) to {uri}",
    ]


@pytest.mark.node_aws_calls("checkpointToS3")
def test_default_checkpoint_to_a_missing_bucket_fails_without_a_traceback(aws, tmp_path, monkeypatch, caplog):
    (tmp_path / "latest").write_text("step-1")
    (tmp_path / "node.json").write_text("{}")
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))

    status = main(["sync-checkpoint", "--region", REGION, str(tmp_path), "s3://no-such-bucket/x/"])

    assert status == 1
    assert "checkpoint sync to s3://no-such-bucket/x/ failed" in caplog.text


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
