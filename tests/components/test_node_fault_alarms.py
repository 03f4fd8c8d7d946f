"""What the stack gives the node agent's fault handling: alarms to the project's topic on node
faults and on the open breaker, per group; and a node role that may count them only in its namespaces."""

from __future__ import annotations

import json

import pytest

from support import deployed_alone, minimal_config, settings_for
from gpucloud.naming import NODE_METRICS_NAMESPACE
from gpucloud.node.replace import NAMESPACE as AGENT_NAMESPACE


@pytest.fixture(scope="module")
def demo():
    """The minimal stack, deployed once for the module on its own account: the tests only read it."""
    with deployed_alone(settings_for(minimal_config())) as deployment:
        yield deployment


def test_the_agent_and_the_stack_name_the_same_namespace():
    assert AGENT_NAMESPACE == NODE_METRICS_NAMESPACE == "gpu-cloud/Node"


def test_each_group_alarms_on_node_faults_and_on_the_open_breaker(demo):
    topic = demo.outputs["alertsTopicArn"]
    alarms = {alarm["MetricName"]: alarm for alarm in demo.client("cloudwatch").describe_alarms()["MetricAlarms"]
              if alarm.get("Namespace") == NODE_METRICS_NAMESPACE}

    assert set(alarms) == {"NodeFaults", "ReplacementsHeld", "ThrottledGpus"}
    for alarm in alarms.values():
        assert alarm["Dimensions"] == [{"Name": "AutoScalingGroupName", "Value": "gpu-cloud-demo-workers"}]
        assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
            "Sum", 1.0, "GreaterThanOrEqualToThreshold")
        assert alarm["AlarmActions"] == [topic] and alarm["TreatMissingData"] == "notBreaching"


def test_the_node_may_put_metrics_only_in_its_namespaces(demo):
    iam = demo.client("iam")
    document = iam.get_role_policy(RoleName="gpu-cloud-demo-node", PolicyName="gpu-cloud-node-access")["PolicyDocument"]
    document = json.loads(document) if isinstance(document, str) else document
    [put] = [statement for statement in document["Statement"] if "cloudwatch:PutMetricData" in statement["Action"]]
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": ["CWAgent", "gpu-cloud/Node"]}}
