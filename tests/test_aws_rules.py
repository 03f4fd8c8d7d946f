"""Rules checked against AWS facts fail before any resource is declared, naming the key."""

from __future__ import annotations

import pytest

from gpucloud.config import ConfigError
from support import deploy, minimal_config, settings_for


def group(**changes):
    return {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, **changes}


def refused(account, values, key: str, reason: str) -> None:
    settings = settings_for(values)
    with pytest.raises(ConfigError) as error:
        deploy(settings, account)
    message = str(error.value)
    assert key in message and reason in message, message
    assert account.client("kms").list_keys()["Keys"] == [], "nothing may be created for a bad config"
    assert account.client("iam").list_roles()["Roles"] == []


def test_instance_type_without_gpu_is_refused(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["g5.xlarge", "m5.large"])]), "gpu-cloud:groups[0].instanceTypes[1]", "m5.large has no GPU")


def test_unknown_instance_type_is_refused(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["g99.huge"])]), "gpu-cloud:groups[0].instanceTypes[0]", "not an instance type offered")


def test_multi_node_group_needs_efa_types(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["p4d.24xlarge", "g5.xlarge"], multiNode=True)]), "gpu-cloud:groups[0].instanceTypes[1]", "does not support EFA")


def test_unknown_subnet_is_refused(account):
    refused(account, minimal_config(network={"subnetIds": ["subnet-0123456789abcdef0"]}), "gpu-cloud:network.subnetIds[0]", "does not exist")


def test_unknown_ami_is_refused(account):
    refused(account, minimal_config(groups=[group(amiId="ami-0123456789abcdef0")]), "gpu-cloud:groups[0].amiId", "does not exist")


def test_every_problem_is_reported_at_once(account):
    values = minimal_config(groups=[group(instanceTypes=["m5.large"]), group(name="second", instanceTypes=["t3.micro"])])
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(values), account)
    assert [key for key, _ in error.value.problems] == ["gpu-cloud:groups[0].instanceTypes[0]", "gpu-cloud:groups[1].instanceTypes[0]"]


def test_explicit_subnets_are_used(account):
    ec2 = account.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{index}.0/24", AvailabilityZone=f"us-east-1{zone}")["Subnet"]["SubnetId"]
        for index, zone in enumerate("ab")
    ]
    deployment = deploy(settings_for(minimal_config(network={"subnetIds": subnets})), account)
    group_record = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][0]
    assert sorted(group_record["VPCZoneIdentifier"].split(",")) == sorted(subnets)
    security_group = deployment.of_type("aws:ec2/securityGroup:SecurityGroup")[0]
    assert security_group.inputs["vpcId"] == vpc
