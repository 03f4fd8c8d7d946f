"""Fixtures for the node agent tests: an IMDSv2 stub and moto-backed Auto Scaling; and the
measurement of the AWS calls node code makes (gpucloud/data/node_aws_calls.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import access_recording
import pytest
from aws_calls import AwsCalls
from gpucloud.config.node_endpoints import MEASURED_CALLS_PATH, NODE_FEATURES, measured_calls
from moto import mock_aws
from node_fakes import GROUP, LAUNCH_HOOK, REGION, TERMINATE_HOOK, ZONE, MetadataStub, aws_client

MEASURE = "GPUCLOUD_MEASURE_NODE_CALLS"
"""Set to 1 (or GPUCLOUD_MEASURE_CALLS, which measures every actor: tests/access_recording.py) to
rewrite the measured calls, here and in gpucloud/data/access_calls.json, instead of checking them:
`GPUCLOUD_MEASURE_NODE_CALLS=1 .venv/bin/python -m pytest -q -p no:xdist -o addopts= tests/node`."""
_MEASURED = pytest.StashKey[dict]()
_ACCESS = pytest.StashKey[dict]()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "node_aws_calls(feature): the test measures the AWS calls of this node feature "
        "(gpucloud.config.node_endpoints.NODE_FEATURES) into gpucloud/data/node_aws_calls.json")
    if access_recording.measuring():
        if hasattr(config, "workerinput") or getattr(config.option, "numprocesses", None):
            raise pytest.UsageError(f"{MEASURE}=1 measures in one process: add -p no:xdist -o addopts=")
        config.stash[_MEASURED] = {}
        config.stash[_ACCESS] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Record the AWS calls node code makes while the test runs; a test that passes must have
    made exactly the calls the data file holds for it (or, measuring, they are kept)."""
    calls = AwsCalls()
    with calls.recording():
        outcome = yield
    marker = item.get_closest_marker("node_aws_calls")
    measured = calls.by_service()
    if marker is None:
        assert not measured, (f"node code called AWS ({json.dumps(measured)}) in a test that names no node feature: "
                              "mark it @pytest.mark.node_aws_calls('<feature>') and measure again")
        return outcome
    feature = marker.args[0]
    assert feature in NODE_FEATURES, f"{feature!r} is not a node feature ({', '.join(NODE_FEATURES)})"
    test = item.nodeid.split("[")[0]  # every case of a parametrized test makes the same calls
    access = access_recording.entries("node", feature, test, calls.requests, through_vpc=True)
    if _MEASURED in item.config.stash:
        earlier = item.config.stash[_MEASURED].setdefault(feature, {}).setdefault(test, measured)
        assert earlier == measured, f"the cases of {test} call AWS differently: split it so each measures one set"
        item.config.stash[_ACCESS][test] = access
        return outcome
    access_recording.check(test, access)
    recorded = measured_calls().get(feature, {}).get(test)
    assert recorded == measured, (
        f"{item.nodeid} measured {json.dumps(measured)} for {feature}, and {MEASURED_CALLS_PATH.name} holds "
        f"{json.dumps(recorded)}: measure again ({MEASURE}=1, see tests/node/conftest.py)")
    return outcome


ABOUT = ("The AWS calls the node's own code makes (bootstrap stub, agent, collector), per node feature: "
         "feature -> node test that measured it -> service (VPC endpoint service) -> operations. Written by "
         "the node tests (tests/node/conftest.py, tests/node/aws_calls.py), never by hand: "
         "GPUCLOUD_MEASURE_NODE_CALLS=1 .venv/bin/python -m pytest -q -p no:xdist -o addopts= tests/node")


def pytest_sessionfinish(session):
    """Measuring: the tests that ran replace their entries; the others stay (a test that is gone
    is named by test_node_aws_calls.py)."""
    measured = session.config.stash.get(_MEASURED, None)
    if measured is None or session.testsfailed:
        return
    ran = {test for tests in measured.values() for test in tests}
    kept = {feature: {test: calls for test, calls in tests.items() if test not in ran}
            for feature, tests in json.loads(MEASURED_CALLS_PATH.read_text())["features"].items()}
    features = {feature: dict(sorted({**kept.get(feature, {}), **measured.get(feature, {})}.items()))
                for feature in NODE_FEATURES}
    MEASURED_CALLS_PATH.write_text(json.dumps({"about": ABOUT, "features": features}, indent=2) + "\n")
    access_recording.write(session.config.stash[_ACCESS])


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
    # moto otherwise builds its catalogue of public AMIs (with snapshots) in every test, and again
    # as the mock ends and rebuilds the backends it touched: that rebuild was a third of the node
    # tests' CPU time. The setting stays until the mock has ended (monkeypatch is undone after
    # this fixture), so the backends it hands on hold no public AMIs: the engine's accounts load
    # the catalog they need themselves (gpucloud.testing.moto_setup.load_well_known_images).
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    with mock_aws():
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
