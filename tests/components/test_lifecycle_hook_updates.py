"""Lifecycle hooks reach AWS on update, not only when the group is created: a changed timeout on an
existing group changes AWS's hook, and nothing else is touched."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest

from gpucloud import AgentArtifacts, AgentArtifactsArgs, GpuInstanceGroup, GpuInstanceGroupArgs
from gpucloud.lookups import DEEP_LEARNING_AMI_PARAMETER
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.testing import UnsupportedResourceError, run_program
from gpucloud.userdata.bundle import build_agent_bundle

GROUP = "team-gpus"


def team_program(launch_timeout: int = 900, terminate_timeout: int = 600, max_size: int = 2):
    def program():
        lookups = PulumiAwsLookups()
        subnets = lookups.default_subnets()
        ami = lookups.ami(lookups.parameter(DEEP_LEARNING_AMI_PARAMETER))
        role = aws.iam.Role("node", assume_role_policy='{"Version":"2012-10-17","Statement":[]}')
        profile = aws.iam.InstanceProfile("node", role=role.name)
        key = aws.kms.Key("key")
        security_group = aws.ec2.SecurityGroup("nodes", vpc_id=subnets[0].vpc_id, description="GPU nodes")
        artifacts = AgentArtifacts("agent", AgentArtifactsArgs(
            bucket_name="team-gpus-artifacts", kms_key_arn=key.arn, reader_role_arns=[role.arn],
            bundle=build_agent_bundle(),
        ))
        GpuInstanceGroup("gpus", GpuInstanceGroupArgs(
            group_name=GROUP,
            instance_types=[lookups.instance_type("g5.xlarge")],
            subnet_ids=[subnet.id for subnet in subnets],
            ami_id=ami.id,
            root_device_name=ami.root_device_name,
            instance_profile_arn=profile.arn,
            kms_key_arn=key.arn,
            security_group_id=security_group.id,
            max_size=max_size,
            launch_hook_timeout_seconds=launch_timeout,
            terminate_hook_timeout_seconds=terminate_timeout,
            agent_bucket=artifacts.args.bucket_name,
            agent_key=artifacts.args.bundle.key,
            agent_sha256=artifacts.args.bundle.sha256,
        ), opts=pulumi.ResourceOptions(depends_on=[artifacts]))
        pulumi.export("group", GROUP)

    return program


def hooks(account) -> dict[str, tuple[int, str]]:
    found = account.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName=GROUP)["LifecycleHooks"]
    return {hook["LifecycleTransition"]: (hook["HeartbeatTimeout"], hook["DefaultResult"]) for hook in found}


def test_a_changed_hook_timeout_reaches_the_existing_group(account):
    first = run_program(team_program(), account)
    assert hooks(account)["autoscaling:EC2_INSTANCE_LAUNCHING"] == (900, "ABANDON")

    second = run_program(team_program(launch_timeout=1800), account, previous=first)

    assert hooks(account) == {
        "autoscaling:EC2_INSTANCE_LAUNCHING": (1800, "ABANDON"),
        "autoscaling:EC2_INSTANCE_TERMINATING": (600, "CONTINUE"),
    }
    changed = {resource.name: resource.operation for resource in second.resources
               if resource.custom and resource.operation != "same"}
    assert changed == {"gpus-launch-hook": "update"}
    assert len(account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]) == 1


def test_the_group_is_created_with_its_hooks_so_no_instance_launches_before_them(account):
    deployment = run_program(team_program(), account)
    [group] = deployment.of_type("aws:autoscaling/group:Group")
    assert [hook["name"] for hook in group.inputs["initialLifecycleHooks"]] == [f"{GROUP}-launch", f"{GROUP}-terminate"]
    assert "initialLifecycleHooks" in group.ignore_changes
    assert all(group.urn in hook.dependencies for hook in deployment.of_type("aws:autoscaling/lifecycleHook:LifecycleHook"))


def test_a_change_the_engine_cannot_update_fails_naming_the_type(account):
    first = run_program(team_program(), account)
    with pytest.raises(UnsupportedResourceError, match="update of resource type 'aws:autoscaling/group:Group'"):
        run_program(team_program(max_size=3), account, previous=first)
