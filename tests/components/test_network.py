"""The network a stack creates: private node subnets, NAT or endpoints only, zones chosen from what
AWS offers; and the network keys refused where they cannot work."""

from __future__ import annotations

import json

import pytest

from support import deploy, minimal_config, settings_for
from gpucloud.components.network import subnet_plan
from gpucloud.config import ConfigError

NODE_ENDPOINTS = ["autoscaling", "ec2", "monitoring", "ssm", "ssmmessages", "ec2messages", "logs"]


def node_subnets(account):
    return account.client("ec2").describe_subnets(Filters=[{"Name": "tag:gpu-cloud:subnet", "Values": ["nodes"]}])["Subnets"]


def test_subnet_sizes_come_from_the_cidr():
    assert subnet_plan("10.64.0.0/16", 3) == (
        ["10.64.0.0/19", "10.64.32.0/19", "10.64.64.0/19"], ["10.64.224.0/22", "10.64.228.0/22", "10.64.232.0/22"]
    )
    assert subnet_plan("192.168.8.0/22", 2) == (["192.168.8.0/25", "192.168.8.128/25"], ["192.168.11.128/28", "192.168.11.144/28"])


def test_a_nat_gateway_per_zone_gives_each_zone_its_own_way_out(account):
    deploy(settings_for(minimal_config(network={"zones": 3, "natGateways": "perZone"})), account)
    ec2 = account.client("ec2")
    nats = {nat["NatGatewayId"]: nat for nat in ec2.describe_nat_gateways()["NatGateways"]}
    assert len(nats) == 3
    for subnet in node_subnets(account):
        [table] = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet["SubnetId"]]}])["RouteTables"]
        [nat_id] = [route["NatGatewayId"] for route in table["Routes"] if route.get("NatGatewayId")]
        nat_subnet = ec2.describe_subnets(SubnetIds=[nats[nat_id]["SubnetId"]])["Subnets"][0]
        assert nat_subnet["AvailabilityZone"] == subnet["AvailabilityZone"]


def test_endpoints_only_has_no_internet_gateway_or_nat_and_warns_what_cannot_work(account):
    network = {"egress": "endpointsOnly", "interfaceEndpoints": [*NODE_ENDPOINTS, "kms"]}
    deployment = deploy(settings_for(minimal_config(network=network)), account)
    ec2 = account.client("ec2")
    created_vpcs = {subnet["VpcId"] for subnet in node_subnets(account)}
    assert not [gateway for gateway in ec2.describe_internet_gateways()["InternetGateways"]
                if {attachment["VpcId"] for attachment in gateway["Attachments"]} & created_vpcs]
    assert ec2.describe_nat_gateways()["NatGateways"] == []
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": list(created_vpcs)}])["VpcEndpoints"]
    interface = sorted(endpoint["ServiceName"].rsplit(".", 1)[1] for endpoint in endpoints if endpoint["VpcEndpointType"] == "Interface")
    assert interface == sorted([*NODE_ENDPOINTS, "kms"])
    assert all(endpoint["PrivateDnsEnabled"] for endpoint in endpoints if endpoint["VpcEndpointType"] == "Interface")
    [warning] = [warning for warning in deployment.warnings
                 if "quotas were not checked" not in warning and "data bucket not checked" not in warning]
    assert warning.startswith("gpu-cloud:network.egress: endpointsOnly") and "package installs" in warning
    assert_interface_endpoints_admit_only_the_account(account, endpoints)


def assert_interface_endpoints_admit_only_the_account(account, endpoints):
    """Each interface endpoint whose service takes a policy holds it to the account's principals
    (AWS's default lets any principal of any account through); through kms only the project key."""
    [key_alias] = [alias for alias in account.client("kms").list_aliases()["Aliases"]
                   if alias["AliasName"] == "alias/gpu-cloud/demo"]
    key_arn = account.client("kms").describe_key(KeyId=key_alias["TargetKeyId"])["KeyMetadata"]["Arn"]
    policies = {endpoint["ServiceName"].split(".", 3)[3]: json.loads(endpoint["PolicyDocument"])
                for endpoint in endpoints if endpoint["VpcEndpointType"] == "Interface"}
    for service, policy in policies.items():
        if service in ("ssmmessages", "ec2messages"):
            continue
        [statement] = policy["Statement"]
        assert statement["Effect"] == "Allow" and statement["Principal"] == "*", service
        assert statement["Condition"] == {"StringEquals": {"aws:PrincipalAccount": account.account_id}}, service
        assert statement["Resource"] == (key_arn if service == "kms" else "*"), service


def test_a_single_zone_group_goes_to_a_zone_that_offers_every_type_it_lists(account):
    """In moto's us-east-1, p4d.24xlarge is offered in a-d only; g5.xlarge everywhere but e."""
    group = {"name": "train", "instanceTypes": ["p4d.24xlarge"], "maxSize": 2, "multiNode": True}
    deploy(settings_for(minimal_config(groups=[group], network={"zones": 2})), account)
    asg = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][0]
    [subnet] = account.client("ec2").describe_subnets(SubnetIds=asg["VPCZoneIdentifier"].split(","))["Subnets"]
    assert subnet["AvailabilityZone"] in {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}


def test_a_type_the_region_does_not_offer_is_refused(account):
    group = {"name": "train", "instanceTypes": ["p5e.48xlarge"], "maxSize": 1}
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[group])), account)
    [(key, why)] = error.value.problems
    assert key == "gpu-cloud:groups[0].instanceTypes[0]" and "p5e.48xlarge is not offered in any zone of the region" in why
    assert "; us-east-1 offers GPU types g4dn.*, g5.*, g5g.*, g6.*" in why and "p4d.*" in why, why
