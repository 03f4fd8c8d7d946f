"""`gpucloud connect`: finds an in-service node of the group in the account and builds the Session
Manager port-forwarding command; refuses, saying what to do, when there is nothing to reach."""

from __future__ import annotations

import json
import time

import pytest

from gpucloud.cli import main
from gpucloud.connect import ConnectError, find_connection
from support import STACKS, deploy, minimal_config, settings_for


def in_service(account, group_name: str, count: int = 1) -> list[str]:
    """Instances of the group, put in service as Auto Scaling does once the launch hook completes."""
    autoscaling = account.client("autoscaling")
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group_name, MinSize=count, DesiredCapacity=count, MaxSize=max(count, 2))
    autoscaling.delete_lifecycle_hook(AutoScalingGroupName=group_name, LifecycleHookName=f"{group_name}-launch")
    autoscaling.set_desired_capacity(AutoScalingGroupName=group_name, DesiredCapacity=count)
    [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
    return sorted(instance["InstanceId"] for instance in group["Instances"] if instance["LifecycleState"] == "InService")


@pytest.mark.access_calls("person:notebookUser", "connect")
def test_the_command_forwards_the_jupyter_port_of_an_in_service_node(account):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    instances = in_service(account, "gpu-cloud-demo-workers")
    assert instances

    connection = find_connection(settings, account.client("autoscaling"))

    assert connection.instance_id == instances[0]
    command = connection.command()
    assert command[:6] == ["aws", "ssm", "start-session", "--target", instances[0], "--document-name"]
    assert command[6] == "AWS-StartPortForwardingSession"
    assert json.loads(command[8]) == {"portNumber": ["8888"], "localPortNumber": ["8888"]}
    assert command[-2:] == ["--region", "us-east-1"]


def test_ssh_is_forwarded_to_a_local_port_the_user_may_bind(account):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    in_service(account, "gpu-cloud-demo-workers")
    connection = find_connection(settings, account.client("autoscaling"), port=22)
    assert json.loads(connection.command()[8]) == {"portNumber": ["22"], "localPortNumber": ["2222"]}


def test_a_group_with_no_node_in_service_says_how_to_get_one(account):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    with pytest.raises(ConnectError, match="has no node in service: scale it up"):
        find_connection(settings, account.client("autoscaling"))


@pytest.mark.parametrize(("values", "group", "reason"), [
    (minimal_config(access={"ssm": False, "sshCidrs": ["10.0.0.0/8"]}), None, "access.ssm: false"),
    (minimal_config(groups=[{"name": "a1", "instanceTypes": ["g5.xlarge"], "maxSize": 1},
                            {"name": "b1", "instanceTypes": ["g5.xlarge"], "maxSize": 1}]), None, "pick one with --group"),
    (minimal_config(), "nope", "has no group 'nope'"),
])
def test_what_cannot_be_connected_is_refused_before_any_aws_call(values, group, reason):
    class NoCalls:
        def describe_auto_scaling_groups(self, **kwargs):
            raise AssertionError("no AWS call expected")

    with pytest.raises(ConnectError, match=reason):
        find_connection(settings_for(values), NoCalls(), group)


def test_the_cli_prints_the_command_for_a_stack_file(account, capsys, monkeypatch):
    settings = settings_for(minimal_config(), stack="notebooks")
    monkeypatch.setattr("gpucloud.cli.connect.load_stack_file", lambda *args, **kwargs: settings)
    deploy(settings, account)
    [instance] = in_service(account, "gpu-cloud-demo_notebooks-workers")
    assert main(["connect", "--stack", "notebooks", "--port", "tensorboard", "--print"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"aws ssm start-session --target {instance} --document-name AWS-StartPortForwardingSession")
    assert '{"portNumber":["6006"],"localPortNumber":["6006"]}' in out
    assert (STACKS / "Pulumi.notebooks.yaml").exists()


class OneNodeInService:
    """The Auto Scaling answer for a group with one healthy in-service node."""

    def describe_auto_scaling_groups(self, **kwargs):
        return {"AutoScalingGroups": [{"Instances": [
            {"InstanceId": "i-0123456789abcdef0", "LifecycleState": "InService", "HealthStatus": "Healthy"}]}]}


def test_local_port_lets_a_second_stack_forward_the_same_remote_port():
    connection = find_connection(settings_for(minimal_config()), OneNodeInService(), None, 8888, local_port=18888)
    assert '{"portNumber":["8888"],"localPortNumber":["18888"]}' in connection.shell()


def test_the_cli_passes_local_port_through(capsys, monkeypatch):
    monkeypatch.setattr("gpucloud.cli.connect.load_stack_file", lambda *args, **kwargs: settings_for(minimal_config()))
    monkeypatch.setattr("boto3.Session.client", lambda self, name, **kwargs: OneNodeInService())
    assert main(["connect", "--stack", "notebooks", "--port", "ssh", "--local-port", "2200", "--print"]) == 0
    assert '{"portNumber":["22"],"localPortNumber":["2200"]}' in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--port", "foo"], "argument --port: 'foo' is not a port: give a number from 1 to 65535 or one of jupyter, tensorboard, ssh"),
    (["--port", "70000"], "argument --port: '70000' is not a port"),
    (["--local-port", "jupyter"], "argument --local-port: 'jupyter' is not a port: give a number from 1 to 65535"),
])
def test_a_port_that_is_no_port_is_refused_in_words(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["connect", "--stack", "notebooks", *arguments])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "invalid literal" not in err


def test_connecting_to_jupyter_says_how_to_read_its_token_and_never_prints_it(capsys, monkeypatch):
    values = minimal_config()
    values["groups"][0]["services"] = {"jupyter": {}}
    monkeypatch.setattr("gpucloud.cli.connect.load_stack_file", lambda *args, **kwargs: settings_for(values))
    monkeypatch.setattr("boto3.Session.client", lambda self, name, **kwargs: OneNodeInService())
    assert main(["connect", "--stack", "demo", "--port", "jupyter", "--print"]) == 0
    err = capsys.readouterr().err
    assert "http://localhost:8888/lab" in err
    assert ("aws ssm get-parameter --name /gpu-cloud/demo/workers/jupyter-token --with-decryption "
            "--query Parameter.Value --output text --region us-east-1") in err


def test_connecting_to_a_service_the_group_does_not_run_says_which_key_adds_it(capsys, monkeypatch):
    monkeypatch.setattr("gpucloud.cli.connect.load_stack_file", lambda *args, **kwargs: settings_for(minimal_config()))
    monkeypatch.setattr("boto3.Session.client", lambda self, name, **kwargs: OneNodeInService())
    assert main(["connect", "--stack", "demo", "--port", "tensorboard", "--print"]) == 0
    assert "runs no TensorBoard: add services.tensorboard" in capsys.readouterr().err


@pytest.mark.access_calls("person:notebookUser", "connect")
def test_start_raises_a_group_at_zero_and_forwards_to_its_new_node(account):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    autoscaling = account.client("autoscaling")
    # moto would hold the node in Pending:Wait for the launch hook the node agent completes on AWS.
    autoscaling.delete_lifecycle_hook(AutoScalingGroupName="gpu-cloud-demo-workers",
                                      LifecycleHookName="gpu-cloud-demo-workers-launch")
    said: list[str] = []

    connection = find_connection(settings, autoscaling, "workers", start=True, progress=said.append)

    [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["gpu-cloud-demo-workers"])["AutoScalingGroups"]
    assert group["DesiredCapacity"] == 1
    assert connection.instance_id == group["Instances"][0]["InstanceId"]
    assert said == ["gpu-cloud-demo-workers was at zero: asked for 1 node"]


def test_start_waits_for_the_node_and_leaves_a_group_already_asking_for_one():
    class Pending:
        def describe_auto_scaling_groups(self, **kwargs):
            return {"AutoScalingGroups": [{"DesiredCapacity": 1, "Instances": [
                {"InstanceId": "i-0123456789abcdef0", "LifecycleState": "Pending:Wait", "HealthStatus": "Healthy"}]}]}

        def set_desired_capacity(self, **kwargs):
            raise AssertionError("a group already asking for a node is left as it is")

    polls: list[float] = []
    said: list[str] = []
    with pytest.raises(ConnectError, match="has no node in service"):
        find_connection(settings_for(minimal_config()), Pending(), start=True, wait_seconds=0.05,
                        sleep=lambda seconds: (polls.append(seconds), time.sleep(0.03)), progress=said.append)
    assert polls and set(polls) == {15}
    assert said[0] == ("waiting for a node of gpu-cloud-demo-workers to pass its health gate: i-0123456789abcdef0 "
                       "Pending:Wait (booting: boot, agent, mount and gate, its launch hook pending); on a node, "
                       "`gpucloud-node phases` names its boot phase")
