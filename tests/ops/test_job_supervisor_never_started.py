"""A job that never starts gives its group back the desired capacity it found, whatever ended it
(Run Command refusing a batch, a failed preflight, an AWS error of the supervisor's), unless
someone changed the capacity meanwhile; and a fabric round's set that Run Command refuses has the
round's other sets cancelled (issue 36, defect 14; issue 37). Executed by moto's Step Functions
with test_job_supervisor.py's fixtures; Run Command's refusal is moto's SendCommand raising."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from gpucloud.documents.job_supervisor_states import SEND_COMMAND_MAX_INSTANCES
from gpucloud.ops.job_control import stop
from gpucloud.ops.jobs import Clients, JobError, new_job
from gpucloud.ops.supervised_jobs import start
from test_job_supervisor import (  # noqa: F401 (aws and agents are fixtures)
    COMMAND,
    GROUP,
    SETTINGS,
    agents,
    aws,
    denied_to_the_supervisor_role,
    detached,
    ended,
    launches,
    notifications,
)
from test_job_supervisor_preflight import commands, fabric, slow_node_of_the_first_round

NODES = 60


def desired(session) -> int:
    group = session.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"]
    return group[0]["DesiredCapacity"]


def refusing(monkeypatch, refused: Callable[[dict, list[str]], bool],
             before: Callable[[], None] = lambda: None) -> list[str]:
    """Run Command refuses each SendCommand that `refused(parameters, instance ids)` names (after
    `before` ran); returns the ids of the commands it accepted. A Map state's iterations send at
    once (moto runs each on a thread of its own), so a refusal is decided by what the command
    holds, never by the order the sends come in."""
    from moto.core.exceptions import JsonRESTError
    from moto.ssm.models import SimpleSystemManagerBackend

    sending = SimpleSystemManagerBackend.send_command  # the agents' own, inside the fixture's block
    sent: list[str] = []

    def send_command(backend, *arguments, **request):
        if refused(request["parameters"], request["instance_ids"]):
            before()
            raise JsonRESTError("ThrottlingException", "Rate exceeded")
        command = sending(backend, *arguments, **request)
        sent.append(command.command_id)
        return command

    monkeypatch.setattr(SimpleSystemManagerBackend, "send_command", send_command)
    return sent


def second_launch_batch(parameters: dict, instance_ids: list[str]) -> bool:
    """The launch batch after the first 50 nodes (ArrayPartition's last, of NODES - 50)."""
    return parameters.get("action") == ["launch"] and len(instance_ids) < SEND_COMMAND_MAX_INSTANCES


def large_job(session):
    """A job of NODES nodes (two batches) on the trainers group, raised from its one node."""
    session.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MaxSize=NODES + 10)
    groups = [group.model_copy(update={"max_size": NODES + 10}) if group.name == "trainers" else group
              for group in SETTINGS.config.groups]
    settings = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"groups": groups})})
    clients = Clients.of(session)
    return clients, start(clients, settings, new_job(settings, "trainers", COMMAND, nodes=NODES), poll=0,
                          preflight="off")


def test_a_refused_batch_gives_the_group_back_the_capacity_it_found(aws, agents, monkeypatch):
    sent = refusing(monkeypatch, second_launch_batch)
    agents.status = lambda command, instance, calls: ("InProgress", -1)
    assert desired(aws) == 1

    clients, arn = large_job(aws)
    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "error"
    assert "Run Command refused a batch of attempt 0" in execution.cause and "Rate exceeded" in execution.cause
    assert agents.cancelled == sent and len(sent) == 1
    assert desired(aws) == 1, "the supervisor raised it to 60 for a job that never started"
    assert [(call["DesiredCapacity"], call["HonorCooldown"]) for _, operation, call in agents.made
            if operation == "SetDesiredCapacity"] == [(60, False), (1, False)], "no wait for the raise's cooldown"
    [(subject, _)] = notifications(aws)
    assert subject.endswith(": error")
    assert denied_to_the_supervisor_role(aws, agents.made) == []


def test_a_job_that_never_started_leaves_a_capacity_someone_else_set_meanwhile(aws, agents, monkeypatch):
    autoscaling = aws.client("autoscaling")
    refusing(monkeypatch, second_launch_batch, before=lambda: autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=65))

    clients, arn = large_job(aws)

    assert ended(clients, arn).error == "error"
    assert desired(aws) == 65


def test_a_failed_preflight_gives_the_group_back_the_capacity_it_found(aws, agents):
    agents.status, agents.output = fabric(aws, slow=lambda instance: True)
    clients, arn, job = detached(aws, nodes=2, preflight="quick")

    execution = ended(clients, arn)

    assert execution.error == "preflight-failed" and launches(aws) == []
    assert desired(aws) == 1


def test_a_group_auto_scaling_will_not_lower_is_named_in_the_end_that_still_reaches_the_topic(aws, agents, monkeypatch):
    from moto.autoscaling.exceptions import ResourceContentionError
    from moto.autoscaling.models import AutoScalingBackend

    setting = AutoScalingBackend.set_desired_capacity
    calls: list[int] = []

    def raised_once(backend, group_name, desired_capacity):
        calls.append(desired_capacity)
        if len(calls) > 1:
            raise ResourceContentionError()
        setting(backend, group_name, desired_capacity)

    monkeypatch.setattr(AutoScalingBackend, "set_desired_capacity", raised_once)
    agents.status, agents.output = fabric(aws, slow=lambda instance: True)
    clients, arn, job = detached(aws, nodes=2, preflight="quick")

    execution = ended(clients, arn)

    assert execution.error == "preflight-failed" and calls == [2, 1] and desired(aws) == 2
    assert (f"(the job never started, and lowering group {GROUP} back to 1 nodes failed: "
            "You already have a pending update") in execution.cause
    [(subject, message)] = notifications(aws)
    assert subject.endswith(": preflight-failed") and "lowering group" in message


def test_an_aws_error_before_the_job_started_gives_the_group_back_the_capacity_it_found(aws, agents, monkeypatch):
    from moto.core.exceptions import JsonRESTError
    from moto.ec2.models import EC2Backend

    def get_reservations_by_instance_ids(backend, *arguments, **options):
        raise JsonRESTError("RequestLimitExceeded", "Request limit exceeded.")

    # DescribeInstances of the nodes picked
    monkeypatch.setattr(EC2Backend, "get_reservations_by_instance_ids", get_reservations_by_instance_ids)
    clients, arn, job = detached(aws, nodes=3)

    execution = ended(clients, arn)

    assert execution.error == "error" and "Request limit exceeded" in execution.cause
    assert desired(aws) == 1 and launches(aws) == []


def test_a_job_that_started_keeps_its_nodes_after_its_end(aws, agents):
    agents.status = lambda command, instance, calls: ("Failed", 1)
    clients, arn, job = detached(aws, nodes=3)

    assert ended(clients, arn).error == "failed"
    assert desired(aws) == 3


@pytest.mark.parametrize("refused_set", [0, 1])
def test_a_refused_set_of_a_fabric_round_cancels_the_round_s_other_sets(aws, agents, monkeypatch, refused_set):
    slow_node_of_the_first_round(aws, agents, -1)
    sets: list[dict] = []
    first: dict[str, str] = {}

    def refused(parameters: dict, instance_ids: list[str]) -> bool:
        """The set at `refused_set` of the first round's two halves: the first half holds the job's first node."""
        if parameters.get("action") == ["preflight"]:
            first.setdefault("address", parameters["nodes"][0].split(",")[0])
        if parameters.get("action") != ["preflight-fabric"]:
            return False
        sets.append(parameters)
        return (first["address"] in parameters["nodes"][0].split(",")) == (refused_set == 0)

    sent = refusing(monkeypatch, refused)
    clients, arn, job = detached(aws, nodes=4, preflight="quick")

    execution = ended(clients, arn)

    assert execution.error == "error" and "Rate exceeded" in execution.cause
    assert len(sets) == 2, "the first round tests the two halves, each its own command"
    fabric_sent = [command["CommandId"] for command in commands(aws, "preflight-fabric")]
    assert len(fabric_sent) == 1 and agents.cancelled == fabric_sent, "the other half's command was cancelled"
    assert set(fabric_sent) <= set(sent) and launches(aws) == []
    assert desired(aws) == 1 and denied_to_the_supervisor_role(aws, agents.made) == []


@contextmanager
def nodes_stuck_at_the_health_gate() -> Iterator[None]:
    """New instances stay Pending:Wait (the GPU health gate's hook), so a job waits for its nodes."""
    from unittest import mock

    from moto.autoscaling.models import InstanceState

    made = InstanceState.__init__

    def stuck(state, instance, lifecycle_state="InService", *arguments, **options):
        made(state, instance, "Pending:Wait", *arguments, **options)

    with mock.patch.object(InstanceState, "__init__", stuck):
        yield


@pytest.mark.access_calls("person:jobRunner", "stop")
def test_stop_before_the_job_started_gives_the_group_back_the_capacity_run_found(aws, agents):
    with nodes_stuck_at_the_health_gate():
        clients, arn, job = detached(aws, nodes=3, node_timeout=600)
        deadline = time.monotonic() + 30
        while desired(aws) != 3:
            assert time.monotonic() < deadline, "the supervisor raises the group first"
            time.sleep(0.05)

        with pytest.raises(JobError) as stopped:
            stop(clients, SETTINGS, job.job_id, say=lambda line: None)

    assert f"job {job.job_id!r} never started on a node; group {GROUP} is back at the desired capacity 1" in str(
        stopped.value)
    assert desired(aws) == 1
    # AWS ends a stopped execution ABORTED; moto's interpreter, stopped mid-task, FAILED
    assert ended(clients, arn).status in ("ABORTED", "FAILED")


def test_stop_before_the_job_started_leaves_a_capacity_someone_else_set_meanwhile(aws, agents):
    with nodes_stuck_at_the_health_gate():
        clients, arn, job = detached(aws, nodes=3, node_timeout=600)
        deadline = time.monotonic() + 30
        while desired(aws) != 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        aws.client("autoscaling").set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=2)

        with pytest.raises(JobError):
            stop(clients, SETTINGS, job.job_id, say=lambda line: None)

    assert desired(aws) == 2


def test_stop_before_the_job_started_finds_it_by_its_supervision_on_a_stack_without_a_write_prefix(aws, agents):
    """No record and no command yet: `stop` finds the job by its execution, stops it and lowers the group."""
    settings = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"data": None})})
    clients = Clients.of(aws)
    with nodes_stuck_at_the_health_gate():
        job = new_job(settings, "trainers", COMMAND, nodes=3)
        arn = start(clients, settings, job, poll=0, node_timeout=600, preflight="off")
        deadline = time.monotonic() + 30
        while desired(aws) != 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)

        with pytest.raises(JobError) as stopped:
            stop(clients, settings, job.job_id, say=lambda line: None)

    assert "never started on a node; group" in str(stopped.value) and desired(aws) == 1
    assert ended(clients, arn).status in ("ABORTED", "FAILED")


def running_in_the_agents(command_id: str) -> None:
    """The command's status as Run Command lists it while its agents run it (moto's stays Success)."""
    from moto.ssm.models import ssm_backends

    ssm_backends["123456789012"]["us-east-1"].get_command_by_id(command_id).status = "InProgress"


def test_stop_during_the_preflight_cancels_its_commands_and_gives_the_group_back(aws, agents):
    agents.status = lambda command, instance, calls: ("InProgress", -1)  # the preflight runs on
    clients, arn, job = detached(aws, nodes=3, preflight="quick")
    deadline = time.monotonic() + 30
    while not commands(aws, "preflight"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    running_in_the_agents(commands(aws, "preflight")[0]["CommandId"])

    with pytest.raises(JobError) as stopped:
        stop(clients, SETTINGS, job.job_id, say=lambda line: None)

    [preflight] = commands(aws, "preflight")
    assert agents.cancelled == [preflight["CommandId"]]
    assert f"cancelled its preflight's command {preflight['CommandId']}; group {GROUP} is back" in str(stopped.value)
    assert desired(aws) == 1 and launches(aws) == []
    ended(clients, arn)
