"""Rules checked against AWS facts fail before any resource is declared, naming the key."""

from __future__ import annotations

import pulumi
import pytest
from botocore.exceptions import ClientError

from gpucloud.config import ConfigError
from gpucloud.plan import PROJECT
from gpucloud.lookups import DEEP_LEARNING_AMI_PARAMETER, LookupUnavailable
from gpucloud.testing import deprecate_image, registry, run_program, run_program_file
from support import ROOT, deploy, minimal_config, private_subnets, settings_for


def group(**changes):
    return {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, **changes}


def refused(account, values, key: str, reason: str) -> None:
    settings = settings_for(values)
    with pytest.raises(ConfigError) as error:
        deploy(settings, account)
    assert any(named == key and reason in why for named, why in error.value.problems), error.value.problems
    assert account.client("kms").list_keys()["Keys"] == [], "nothing may be created for a bad config"
    assert account.client("iam").list_roles()["Roles"] == []


def test_instance_type_without_gpu_is_refused(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["g5.xlarge", "m5.large"])]), "gpu-cloud:groups[0].instanceTypes[1]", "m5.large has no GPU")


def test_unknown_instance_type_is_refused(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["g99.huge"])]), "gpu-cloud:groups[0].instanceTypes[0]", "not an instance type offered")


def test_misspelt_instance_type_gets_the_closest_offered_type_and_the_regions_gpu_families(account):
    refused(account, minimal_config(groups=[group(instanceTypes=["g5.xlarg"])]), "gpu-cloud:groups[0].instanceTypes[0]",
            "g5.xlarg is not an instance type offered in this region (did you mean 'g5.xlarge'?); "
            "us-east-1 offers GPU types g4dn.*, g5.*, g5g.*")


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
    subnets = private_subnets(ec2, "10.20.0.0/16", "ab")
    vpc = ec2.describe_subnets(SubnetIds=subnets)["Subnets"][0]["VpcId"]
    deployment = deploy(settings_for(minimal_config(network={"subnetIds": subnets})), account)
    group_record = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][0]
    assert sorted(group_record["VPCZoneIdentifier"].split(",")) == sorted(subnets)
    security_group = deployment.of_type("aws:ec2/securityGroup:SecurityGroup")[0]
    assert security_group.inputs["vpcId"] == vpc


def vpc_with_subnets(account, cidr: str, zones: str, egress: str = "nat") -> list[str]:
    return private_subnets(account.client("ec2"), cidr, zones, egress)


def test_subnets_of_several_vpcs_are_refused(account):
    first, second = vpc_with_subnets(account, "10.20.0.0/16", "a") + vpc_with_subnets(account, "10.30.0.0/16", "b")
    refused(account, minimal_config(network={"subnetIds": [first, second]}), "gpu-cloud:network.subnetIds", "spans several VPCs")


def test_a_region_without_a_default_vpc_still_plans_in_its_own_network(account):
    ec2 = account.client("ec2")
    [default_vpc] = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [default_vpc["VpcId"]]}])["Subnets"]:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    ec2.delete_vpc(VpcId=default_vpc["VpcId"])

    deployment = deploy(settings_for(minimal_config()), account)

    [vpc] = deployment.of_type("aws:ec2/vpc:Vpc")
    assert deployment.of_type("aws:ec2/securityGroup:SecurityGroup")[0].inputs["vpcId"] == vpc.id


def test_ami_of_another_architecture_is_refused(account):
    arm_image = account.client("ec2").describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["arm64"]}, {"Name": "name", "Values": ["al2022-ami-*"]}]
    )["Images"][0]["ImageId"]

    refused(account, minimal_config(groups=[group(amiId=arm_image)]), "gpu-cloud:groups[0].instanceTypes", f"g5.xlarge does not run arm64 AMIs such as {arm_image}")


def test_missing_deep_learning_ami_parameter_is_named(account):
    account.client("ssm").delete_parameter(Name=DEEP_LEARNING_AMI_PARAMETER)

    refused(account, minimal_config(), "gpu-cloud:groups[0].amiId", f"the public parameter {DEEP_LEARNING_AMI_PARAMETER} is missing")


def test_persistent_volume_follows_the_first_subnet_listed_not_the_first_zone(account):
    late_zone, early_zone = vpc_with_subnets(account, "10.40.0.0/16", "ca")
    notebook = group(maxSize=1, persistentVolumeGiB=100, spotPercent=0)

    deploy(settings_for(minimal_config(network={"subnetIds": [late_zone, early_zone]}, groups=[notebook])), account)

    [volume] = [v for v in account.client("ec2").describe_volumes()["Volumes"] if v.get("Tags")]
    assert volume["AvailabilityZone"] == "us-east-1c"
    [asg] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert asg["VPCZoneIdentifier"] == late_zone


@pytest.fixture
def throttled_instance_types(monkeypatch):
    """EC2 answers DescribeInstanceTypes with throttling, as it does under load."""

    def throttled(account, args):
        raise ClientError({"Error": {"Code": "RequestLimitExceeded", "Message": "Request limit exceeded."}}, "DescribeInstanceTypes")

    monkeypatch.setitem(registry.INVOKES, "aws:ec2/getInstanceType:getInstanceType", throttled)


def test_failed_lookup_is_reported_as_such_not_as_a_missing_type(account, throttled_instance_types):
    with pytest.raises(LookupUnavailable, match="RequestLimitExceeded"):
        deploy(settings_for(minimal_config()), account)
    assert account.client("kms").list_keys()["Keys"] == []


def test_program_says_a_failed_lookup_is_not_a_config_problem(account, throttled_instance_types):
    config = {f"gpu-cloud:{key}": value for key, value in minimal_config().items()}

    with pytest.raises(pulumi.RunError) as failed:
        run_program_file(ROOT / "infra" / "__main__.py", account, project=PROJECT, stack="demo", config=config)

    assert "not a config problem" in str(failed.value) and "RequestLimitExceeded" in str(failed.value)
    assert "is not an instance type offered" not in str(failed.value)


def config_warnings(deployment) -> list[str]:
    """The program's warnings less the lines saying what was not checked without account facts
    (the quotas, the data bucket)."""
    return [warning for warning in deployment.warnings
            if "quotas were not checked" not in warning and "data bucket not checked" not in warning]


def x86_image(account) -> str:
    return account.client("ec2").describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["al2022-ami-*"]}]
    )["Images"][0]["ImageId"]


def test_a_deprecated_pinned_ami_still_deploys_with_a_warning_giving_its_date(account):
    image = x86_image(account)
    deprecate_image(account, image, "2025-06-30T00:00:00.000Z")

    deployment = deploy(settings_for(minimal_config(groups=[group(amiId=image)])), account)

    assert config_warnings(deployment) == [
        f"gpu-cloud:groups[0].amiId: {image} was deprecated by its owner on 2025-06-30: it still launches, but "
        "gets no fixes and leaves default image searches; pin a current image"
    ]
    [template] = account.client("ec2").describe_launch_templates()["LaunchTemplates"]
    version = account.client("ec2").describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])
    assert version["LaunchTemplateVersions"][0]["LaunchTemplateData"]["ImageId"] == image


def test_an_image_deprecated_later_is_no_warning_yet(account):
    image = x86_image(account)
    deprecate_image(account, image, "2999-01-01T00:00:00.000Z")
    assert config_warnings(deploy(settings_for(minimal_config(groups=[group(amiId=image)])), account)) == []


def test_the_engine_leaves_deprecated_images_out_of_lookups_unless_asked(account):
    image = x86_image(account)
    deprecate_image(account, image, "2025-06-30T00:00:00.000Z")
    found = {}

    def program():
        import pulumi_aws as aws

        by_id = [aws.ec2.GetAmiFilterArgs(name="image-id", values=[image])]
        found["included"] = aws.ec2.get_ami(filters=by_id, include_deprecated=True).deprecation_time
        with pytest.raises(Exception, match="no results"):
            aws.ec2.get_ami(filters=by_id)

    run_program(program, account)
    assert found["included"] == "2025-06-30T00:00:00.000Z"


def test_program_warnings_reach_the_plan_as_findings():
    from gpucloud.plan import plan_program

    plan = plan_program(lambda: pulumi.log.warn("gpu-cloud:network: something to look at"))
    assert [(f.source, f.severity, f.message) for f in plan.findings if f.rule == "program-warning"] == [
        ("program", "warning", "gpu-cloud:network: something to look at")
    ]


def test_listed_subnets_in_zones_without_the_groups_type_are_refused_naming_group_type_and_zones(account):
    [only_e] = vpc_with_subnets(account, "10.40.0.0/16", "e")
    refused(account, minimal_config(network={"subnetIds": [only_e]}), "gpu-cloud:groups[0].instanceTypes[0]",
            "g5.xlarge is offered in none of the zones (us-east-1e) of the stack's subnets")


def test_a_type_missing_from_some_listed_zones_is_a_warning(account):
    subnets = vpc_with_subnets(account, "10.40.0.0/16", "ae")
    deployment = deploy(settings_for(minimal_config(network={"subnetIds": subnets})), account)
    assert config_warnings(deployment) == [
        "gpu-cloud:groups[0].instanceTypes[0]: g5.xlarge is not offered in us-east-1e: the group launches it only in its other zones"
    ]
    group = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][0]
    assert group["VPCZoneIdentifier"] == subnets[0]


def test_a_single_zone_group_takes_the_first_listed_zone_offering_its_types_and_says_so(account):
    subnets = vpc_with_subnets(account, "10.40.0.0/16", "eb")
    values = minimal_config(network={"subnetIds": subnets},
                            groups=[group(persistentVolumeGiB=100, spotPercent=0, maxSize=1)])
    deployment = deploy(settings_for(values), account)
    [volume] = account.client("ec2").describe_volumes(Filters=[{"Name": "tag:gpu-cloud:stack", "Values": ["demo"]}])["Volumes"]
    assert volume["AvailabilityZone"] == "us-east-1b"
    assert any("stays in us-east-1b" in warning for warning in deployment.warnings)


def test_public_subnets_whose_only_way_out_is_an_internet_gateway_are_refused(account):
    [public] = vpc_with_subnets(account, "10.41.0.0/16", "a", egress="igw")
    refused(account, minimal_config(network={"subnetIds": [public]}), "gpu-cloud:network.subnetIds[0]",
            f"{public} routes 0.0.0.0/0 only to internet gateway igw-")


def test_subnets_without_a_way_out_need_every_endpoint_the_nodes_call(account):
    [isolated] = vpc_with_subnets(account, "10.42.0.0/16", "a", egress="none")
    refused(account, minimal_config(network={"subnetIds": [isolated]}), "gpu-cloud:network.subnetIds[0]",
            "lacks the VPC endpoints for monitoring (the CloudWatch agent: PutMetricData; ")
    refused(account, minimal_config(network={"subnetIds": [isolated]}, groups=[group(dataVolumeGiB=100)]),
            "gpu-cloud:network.subnetIds[0]", "ec2 (the CloudWatch agent: DescribeTags; groups[0].dataVolumeGiB: DescribeInstances)")


def test_subnets_without_a_default_route_but_with_every_endpoint_are_accepted(account):
    ec2 = account.client("ec2")
    [isolated] = vpc_with_subnets(account, "10.43.0.0/16", "a", egress="none")
    vpc = ec2.describe_subnets(SubnetIds=[isolated])["Subnets"][0]["VpcId"]
    for service in ("s3", "autoscaling", "monitoring", "ec2", "logs"):
        ec2.create_vpc_endpoint(VpcId=vpc, ServiceName=f"com.amazonaws.us-east-1.{service}",
                                VpcEndpointType="Gateway" if service == "s3" else "Interface")
    deploy(settings_for(minimal_config(network={"subnetIds": [isolated]}, access={"ssm": False})), account)


def test_a_transit_gateway_default_route_counts_as_a_way_out(account):
    ec2 = account.client("ec2")
    [subnet] = vpc_with_subnets(account, "10.44.0.0/16", "a", egress="none")
    vpc = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["VpcId"]
    [main] = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "association.main", "Values": ["true"]}])["RouteTables"]
    gateway = ec2.create_transit_gateway()["TransitGateway"]["TransitGatewayId"]
    ec2.create_route(RouteTableId=main["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", TransitGatewayId=gateway)
    deploy(settings_for(minimal_config(network={"subnetIds": [subnet]})), account)
