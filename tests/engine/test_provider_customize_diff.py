"""What the bridged provider's CustomizeDiff refuses on an FSx for Lustre file system and an ELBv2
listener (rules that hang on another property's value, so the schema rules of
data/provider_rules.json cannot say them): the handler refuses them first, as `pulumi preview` does,
naming the provider file and commit (read 2026-11-27)."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from gpucloud.plan import plan_program
from gpucloud.testing import moto_account, provider_rules
from gpucloud.testing.handlers.elbv2 import create_listener
from gpucloud.testing.handlers.fsx import create_lustre_file_system
from gpucloud.testing.provider_rules import ProviderRulesBroken
from gpucloud.testing.registry import ResourceRequest

LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
LISTENER = "aws:lb/listener:Listener"
LUSTRE_SOURCE = "internal/service/fsx/lustre_file_system.go@36a1e2ce5bfa"
LISTENER_SOURCE = "internal/service/elbv2/listener.go@07899042d5d5"
BALANCER = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/50dc6c495c0c9188"
GROUP = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/73e2d6bc24d8a067"
OTHER_GROUP = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/other/0123456789abcdef"


def _lustre_with_network(account, **inputs):
    ec2 = account.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="fs", Description="fs", VpcId=vpc)["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 988, "ToPort": 988, "UserIdGroupPairs": [{"GroupId": group}]}])
    return {"storageCapacity": 1200, "subnetIds": subnet, "securityGroupIds": [group], **inputs}


@pytest.mark.parametrize(("inputs", "refused"), [
    ({"deploymentType": "SCRATCH_2", "metadataConfiguration": {"mode": "AUTOMATIC"}},
     "metadataConfiguration breaks the provider rule CustomizeDiff: metadata_configuration can only be set when "
     "deployment type is PERSISTENT_2 (deploymentType is SCRATCH_2)"),
    ({"metadataConfiguration": {"mode": "AUTOMATIC"}},
     "metadataConfiguration breaks the provider rule CustomizeDiff: metadata_configuration can only be set when "
     "deployment type is PERSISTENT_2 (deploymentType is SCRATCH_1)"),
    ({"deploymentType": "PERSISTENT_2", "storageType": "INTELLIGENT_TIERING"},
     "throughputCapacity breaks the provider rule CustomizeDiff: ThroughputCapacity is a required parameter"),
    ({"deploymentType": "PERSISTENT_2", "storageType": "INTELLIGENT_TIERING", "throughputCapacity": 8000,
      "dataReadCacheConfiguration": {"sizingMode": "USER_PROVISIONED", "size": 32}},
     "dataReadCacheConfiguration.size = 32 breaks the provider rule CustomizeDiff: file systems with throughput "
     "capacity of 8000 MB/s support a read cache of 64 to 262144 GiB"),
])
def test_the_file_system_handler_refuses_what_the_providers_customize_diff_refuses(inputs, refused):
    with moto_account() as account:
        request = ResourceRequest(LUSTRE, "fs", _lustre_with_network(account, **inputs))
        with pytest.raises(ProviderRulesBroken) as error:
            create_lustre_file_system(account, request)

    [violation] = error.value.violations
    assert violation.message.startswith(f"{LUSTRE} 'fs': {refused}")
    assert f"hashicorp/terraform-provider-aws {LUSTRE_SOURCE}" in violation.message


def test_a_persistent_2_file_system_may_have_a_metadata_configuration():
    with moto_account() as account:
        inputs = _lustre_with_network(account, deploymentType="PERSISTENT_2", perUnitStorageThroughput=125,
                                      metadataConfiguration={"mode": "USER_PROVISIONED", "iops": 1500})
        created = create_lustre_file_system(account, ResourceRequest(LUSTRE, "fs", inputs))

    assert created.id.startswith("fs-")


def test_the_plan_fails_on_a_customize_diff_refusal_naming_the_provider_file():
    from gpucloud.plan.program_source import ProgramFailed

    with pytest.raises(ProgramFailed) as failed:
        plan_program(lambda: aws.fsx.LustreFileSystem(
            "scratch", subnet_ids="subnet-0123456789abcdef0", deployment_type="SCRATCH_2", storage_capacity=1200,
            metadata_configuration={"mode": "AUTOMATIC"}))

    assert isinstance(failed.value.error, ProviderRulesBroken)
    assert "metadata_configuration can only be set when deployment type is PERSISTENT_2" in str(failed.value.error)
    assert LUSTRE_SOURCE in str(failed.value.error)


def _listener(**inputs):
    return {"loadBalancerArn": BALANCER, "port": 80, "protocol": "HTTP", **inputs}


@pytest.mark.parametrize(("inputs", "refused"), [
    ({"defaultActions": [{"type": "forward"}]},
     "defaultActions[0].type breaks the provider rule CustomizeDiff: either target_group_arn or forward must be "
     "specified when type is forward"),
    ({"defaultActions": [{"type": "forward", "targetGroupArn": GROUP, "forward": {"targetGroups": [{"arn": OTHER_GROUP}]}}]},
     "defaultActions[0] breaks the provider rule CustomizeDiff: target_group_arn and forward target groups may both be "
     "set only if the ARNs match"),
    ({"defaultActions": [{"type": "redirect"}]},
     "defaultActions[0].redirect breaks the provider rule CustomizeDiff: required when type is redirect"),
    ({"defaultActions": [{"type": "forward", "targetGroupArn": GROUP}], "mutualAuthentication": {"mode": "verify"}},
     "mutualAuthentication.trustStoreArn breaks the provider rule CustomizeDiff: required when mode is verify"),
    ({"defaultActions": [{"type": "forward", "targetGroupArn": GROUP}],
      "mutualAuthentication": {"mode": "off", "ignoreClientCertificateExpiry": True}},
     "mutualAuthentication.ignoreClientCertificateExpiry breaks the provider rule CustomizeDiff: cannot be set when "
     "mode is off"),
])
def test_the_listener_handler_refuses_what_the_providers_customize_diff_refuses(inputs, refused):
    with moto_account() as account, pytest.raises(ProviderRulesBroken) as error:
        create_listener(account, ResourceRequest(LISTENER, "web", _listener(**inputs)))

    [violation] = error.value.violations
    assert violation.message.startswith(f"{LISTENER} 'web': {refused}")
    assert f"hashicorp/terraform-provider-aws {LISTENER_SOURCE}" in violation.message


@pytest.mark.parametrize("action", [
    {"type": "forward", "targetGroupArn": GROUP},
    {"type": "forward", "targetGroupArn": GROUP, "forward": {"targetGroups": [{"arn": GROUP}]}},
    {"type": "forward", "forward": {"targetGroups": [{"arn": GROUP}]}},
    {"type": "redirect", "redirect": {"statusCode": "HTTP_301"}},
])
def test_actions_the_provider_takes_pass_its_customize_diff(action):
    from gpucloud.testing.handlers.elbv2 import _listener_customize_diff

    _listener_customize_diff(ResourceRequest(LISTENER, "web", _listener(defaultActions=[action])))


@pytest.mark.parametrize(("resource_type", "inputs", "refused"), [
    (LUSTRE, {"throughputCapacity": 6000}, "throughputCapacity = 6000 breaks the provider rule a multiple of 4000"),
    (LUSTRE, {"dataReadCacheConfiguration": {"sizingMode": "SOMETIMES"}}, "dataReadCacheConfiguration.sizingMode"),
    (LISTENER, {"tcpIdleTimeoutSeconds": 30}, "tcpIdleTimeoutSeconds = 30 breaks the provider rule range: between 60 and 6000"),
    (LISTENER, {"defaultActions": [{"type": "jwt-validation", "jwtValidation": {
        "issuer": "https://issuer", "jwksEndpoint": "https://issuer/jwks",
        "additionalClaims": [{"format": "json", "name": "scope", "values": ["read"]}]}}]},
     "defaultActions[0].jwtValidation.additionalClaims[0].format = \"json\" breaks the provider rule enum: one of "
     "single-string, string-array, space-separated-values"),
])
def test_the_re_read_schema_rules_of_the_two_types(resource_type, inputs, refused):
    [violation] = provider_rules.check(resource_type, "r", inputs)

    assert refused in violation.message
