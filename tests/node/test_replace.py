"""A node fault gets the node replaced: counted in CloudWatch, checkpoint saved, instance marked
Unhealthy in moto's group; past maxReplacementsPerHour the breaker only marks it."""

from __future__ import annotations

import datetime

import pytest

from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.faults import Finding
from gpucloud.node.replace import NAMESPACE, replace_node
from node_fakes import GROUP, NO_WAIT, REGION, aws_client

FAULT = [Finding("node-fault", "0000:53:00", "Xid 79 (RESTART_BM in NVIDIA's catalog): GPU has fallen off the bus.")]


def health(instance_id: str) -> str:
    [instance] = aws_client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance_id])["AutoScalingInstances"]
    return instance["HealthStatus"].upper()  # AWS answers HEALTHY, moto Healthy


def metric_sum(name: str) -> float:
    now = datetime.datetime.now(datetime.UTC)
    points = aws_client("cloudwatch").get_metric_statistics(
        Namespace=NAMESPACE, MetricName=name, Dimensions=[{"Name": "AutoScalingGroupName", "Value": GROUP}],
        StartTime=now - datetime.timedelta(hours=1), EndTime=now + datetime.timedelta(minutes=1),
        Period=3600, Statistics=["Sum"],
    )["Datapoints"]
    return sum(point["Sum"] for point in points)


def replace(gpu_group, tmp_path, limit: int, ran: list) -> str:
    config = NodeConfig(group_name=GROUP, region=REGION, checkpoint_bucket="ckpt", checkpoint_dir=str(tmp_path))
    (tmp_path / "step-100.pt").write_text("weights")
    return replace_node(
        config, gpu_group.instance_id, REGION, GROUP, FAULT, limit,
        client_factory=aws_client, run=lambda argv, timeout_s, env=None: ran.append(argv) or CommandResult(tuple(argv), 0),
        backoff=NO_WAIT, sleep=lambda seconds: None,
        now=lambda: datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=1),
    )


@pytest.mark.node_aws_calls("healthReplace")
def test_a_node_fault_saves_the_checkpoint_and_marks_the_instance_unhealthy(gpu_group, tmp_path, caplog):
    ran: list = []
    assert health(gpu_group.instance_id) == "HEALTHY"

    assert replace(gpu_group, tmp_path, limit=2, ran=ran) == "replaced"

    assert health(gpu_group.instance_id) == "UNHEALTHY"
    assert ran, "the checkpoint command ran before the instance was marked"
    assert (metric_sum("NodeFaults"), metric_sum("NodeReplacements")) == (1, 1)
    assert '"event": "node-fault"' in caplog.text and "GPU has fallen off the bus" in caplog.text


@pytest.mark.node_aws_calls("healthReplace")
def test_past_the_limit_the_breaker_only_marks_the_node(gpu_group, tmp_path):
    aws_client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[{
        "MetricName": "NodeReplacements", "Dimensions": [{"Name": "AutoScalingGroupName", "Value": GROUP}],
        "Value": 2, "Unit": "Count"}])
    ran: list = []

    assert replace(gpu_group, tmp_path, limit=2, ran=ran) == "held"

    assert health(gpu_group.instance_id) == "HEALTHY"
    assert ran == [], "no checkpoint, no drain: the node keeps running"
    assert (metric_sum("NodeFaults"), metric_sum("ReplacementsHeld"), metric_sum("NodeReplacements")) == (1, 1, 2)
