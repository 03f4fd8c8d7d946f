"""The network keys: refused where the network they describe could not work, naming the key."""

from __future__ import annotations

import re

import pytest

from support import minimal_config, settings_for
from gpucloud.config import ConfigError


def problems(values):
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    return error.value.problems


@pytest.mark.parametrize(("cidr", "reason"), [
    ("10.0.0.0/8", "/16 to /22"), ("10.0.0.0/23", "/16 to /22"), ("8.8.0.0/16", "not in a private range"),
    ("10.0.0.1/16", "not a CIDR block"),
])
def test_cidrs_the_subnet_plan_cannot_use_are_refused(cidr, reason):
    [(key, why)] = problems(minimal_config(network={"cidr": cidr}))
    assert key == "gpu-cloud:network.cidr" and reason in why


def test_created_network_keys_beside_listed_subnets_are_refused():
    [(key, why)] = problems(minimal_config(network={"subnetIds": ["subnet-0123456789abcdef0"], "natGateways": "perZone"}))
    assert key == "gpu-cloud:network" and "natGateways shape the network the stack creates" in why


def test_endpoints_only_without_the_endpoints_nodes_call_is_refused_naming_them():
    [(key, why)] = problems(minimal_config(network={"egress": "endpointsOnly", "interfaceEndpoints": ["logs"]}))
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert why.startswith("lacks monitoring (the CloudWatch agent: PutMetricData; every node: PutMetricData; ")
    lacking = re.findall(r"(?:lacks |\), )([a-z0-9-]+) \(", why)
    assert lacking == ["monitoring", "ec2", "ssm", "ssmmessages", "ec2messages", "autoscaling"], "measured, logs not among them"
    assert "package installs" in why


def test_flow_log_retention_must_be_one_cloudwatch_takes():
    [(key, why)] = problems(minimal_config(network={"flowLogsRetentionDays": 10}))
    assert key == "gpu-cloud:network.flowLogsRetentionDays" and "not a retention CloudWatch Logs takes" in why
