"""Fixtures for the node agent tests: an IMDSv2 stub and moto-backed Auto Scaling."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from moto import mock_aws
from node_fakes import GROUP, LAUNCH_HOOK, REGION, TERMINATE_HOOK, ZONE, MetadataStub, aws_client


@pytest.fixture
def metadata_stub():
    stub = MetadataStub()
    stub.thread.start()
    yield stub
    stub.server.shutdown()
    stub.server.server_close()


@pytest.fixture
def aws_credentials(monkeypatch):
    """Mocked AWS credentials for moto."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def aws(aws_credentials, monkeypatch):
    with mock_aws():
        with monkeypatch.context() as no_public_amis:
            # moto otherwise builds its catalogue of public AMIs (with snapshots) for every test.
            # The setting must be gone before the mock ends: moto rebuilds its backends on the way
            # out and hands them to the next account, which would find no AMIs at all.
            no_public_amis.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
            yield


@dataclass
class LifecycleActions:
    """What the CompleteLifecycleAction and RecordLifecycleActionHeartbeat stand-ins recorded;
    `pending` False (and any completed action) answers like AWS does for an instance with no
    action waiting (e.g. after a reboot)."""

    completed: list[dict[str, str]] = field(default_factory=list)
    heartbeats: list[dict[str, str]] = field(default_factory=list)
    pending: bool = True


@pytest.fixture
def lifecycle_actions(monkeypatch) -> LifecycleActions:
    # moto 5 implements neither CompleteLifecycleAction nor RecordLifecycleActionHeartbeat; these
    # stand-ins, patched into moto's Auto Scaling responses, validate each call against moto's
    # groups and hooks and record it.
    from moto.autoscaling.exceptions import ValidationError
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.core.responses import EmptyResult

    actions = LifecycleActions()

    def pending_action(response) -> dict[str, str]:
        group = response._get_param("AutoScalingGroupName")
        hook = response._get_param("LifecycleHookName")
        instance_id = response._get_param("InstanceId")
        backend = response.autoscaling_backend
        if not backend.describe_lifecycle_hooks(group, [hook]):
            raise ValidationError(f"No Lifecycle Hook found with name {hook} on group {group}")
        members = [state.instance.id for state in backend.autoscaling_groups[group].instance_states]
        done = any(action["instance_id"] == instance_id for action in actions.completed)
        if instance_id not in members or not actions.pending or done:
            raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")
        return {"group": group, "hook": hook, "instance_id": instance_id}

    def complete_lifecycle_action(self):
        actions.completed.append({**pending_action(self), "result": self._get_param("LifecycleActionResult")})
        return EmptyResult()

    def record_lifecycle_action_heartbeat(self):
        actions.heartbeats.append(pending_action(self))
        return EmptyResult()

    monkeypatch.setattr(
        AutoScalingResponse, "complete_lifecycle_action", complete_lifecycle_action, raising=False
    )
    monkeypatch.setattr(
        AutoScalingResponse, "record_lifecycle_action_heartbeat", record_lifecycle_action_heartbeat, raising=False
    )
    return actions


@dataclass
class AutoScalingGroup:
    name: str
    instance_id: str


@pytest.fixture
def gpu_group(aws) -> AutoScalingGroup:
    """A one-instance group from a launch template, with launch and terminate hooks, in moto."""
    ec2 = aws_client("ec2")
    autoscaling = aws_client("autoscaling")
    # Any image id will do: moto does not validate it.
    ec2.create_launch_template(
        LaunchTemplateName=f"{GROUP}-lt",
        LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge"},
    )
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=GROUP,
        LaunchTemplate={"LaunchTemplateName": f"{GROUP}-lt", "Version": "$Latest"},
        MinSize=1,
        MaxSize=1,
        DesiredCapacity=1,
        AvailabilityZones=[ZONE],
    )
    for hook, transition in (
        (LAUNCH_HOOK, "autoscaling:EC2_INSTANCE_LAUNCHING"),
        (TERMINATE_HOOK, "autoscaling:EC2_INSTANCE_TERMINATING"),
    ):
        autoscaling.put_lifecycle_hook(
            LifecycleHookName=hook,
            AutoScalingGroupName=GROUP,
            LifecycleTransition=transition,
            HeartbeatTimeout=900,
            DefaultResult="ABANDON",
        )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    return AutoScalingGroup(GROUP, group["Instances"][0]["InstanceId"])
