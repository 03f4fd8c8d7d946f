"""What `gpucloud run` decides without AWS: how long it waits for N nodes before it gives up, how
many nodes a job asks for by default and on which groups, what it asks of Auto Scaling and SSM,
how it reads a node's invocation, and which exit code the nodes' results make. Fake clients and a
fake clock, so each verdict is checked at its edge."""

from __future__ import annotations

import re

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from gpucloud.config import load_stack_file
from gpucloud.ops.jobs import (
    Attempt,
    Clients,
    Clock,
    JobError,
    NodeResult,
    Outcome,
    new_job,
    send,
    start,
    wait_for_nodes,
    watch,
)
from gpucloud.ops.nodes import Node
from support import STACKS

SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
COMMAND = ["python", "train.py"]


class Group:
    """An Auto Scaling group and EC2 as `wait_for_nodes` reads them: `ready(now)` instances are in
    service at each time the clock shows."""

    def __init__(self, clock: FakeClock, ready):
        self.clock = clock
        self.ready = ready
        self.polls: list[float] = []

    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        self.polls.append(self.clock.time)
        instances = [{"InstanceId": f"i-{index}", "LifecycleState": "InService"} for index in range(self.ready(self.clock.time))]
        return {"AutoScalingGroups": [{"Instances": instances}]}

    def get_paginator(self, name):
        group = self

        class Pages:
            def paginate(self, InstanceIds):
                instances = [{"InstanceId": iid, "PrivateIpAddress": f"10.0.0.{int(iid[2:]) + 1}"} for iid in InstanceIds]
                return [{"Reservations": [{"Instances": instances}]}]

        return Pages()


class FakeClock(Clock):
    def __init__(self):
        self.time = 0.0
        super().__init__(now=lambda: self.time, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.time += seconds


def waiting(nodes: int, ready, timeout: float = 60, poll: float = 15):
    clock = FakeClock()
    group = Group(clock, ready)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=nodes, job_id="trainers-20261128190000-0001")
    clients = Clients(autoscaling=group, ec2=group, ssm=None, logs=None, s3=None)
    return wait_for_nodes(clients, job, timeout, clock, poll), group.polls


def test_run_waits_until_the_timeout_for_nodes_that_come_late():
    found, polls = waiting(2, ready=lambda now: 2 if now >= 45 else 1)

    assert [node.instance_id for node in found] == ["i-0", "i-1"]
    assert polls == [0, 15, 30, 45]


def test_run_gives_up_at_the_timeout_and_not_before():
    found, polls = waiting(2, ready=lambda now: 1)

    assert found is None
    assert polls == [0, 15, 30, 45, 60], "the last look is at the deadline itself"


def test_nodes_already_in_service_need_no_wait_and_the_first_n_by_address_are_taken():
    found, polls = waiting(2, ready=lambda now: 3)

    assert found == [Node("i-0", "10.0.0.1"), Node("i-1", "10.0.0.2")] and polls == [0]


def test_a_job_runs_on_one_node_unless_told_otherwise():
    assert new_job(SETTINGS, "trainers", COMMAND).nodes == 1
    assert new_job(SETTINGS, "trainers", COMMAND, nodes=None).nodes == 1


def test_a_negative_node_count_is_refused():
    with pytest.raises(JobError, match="a job needs at least one node"):
        new_job(SETTINGS, "trainers", COMMAND, nodes=-1)


def outcome(*codes: int | None, stopped: str | None = None) -> int:
    results = [NodeResult(rank, Node(f"i-{rank}", f"10.0.0.{rank + 1}"), "Failed" if code else "Success", code)
               for rank, code in enumerate(codes)]
    return Outcome(job=None, results=results, stopped=stopped).exit_code  # type: ignore[arg-type]


@pytest.mark.parametrize("codes, exit_code", [
    ((0, 0), 0),
    ((0, 3), 3),
    ((3, 0), 3),
    ((0, 2, 7), 2),
    ((None, 4), 4),
    ((0, None), 1),
    ((None, None), 1),
    ((0, 1), 1),
])
def test_the_first_node_that_failed_gives_the_exit_code_and_one_without_a_code_gives_1(codes, exit_code):
    assert outcome(*codes) == exit_code


def test_a_stopped_job_exits_1_whatever_its_nodes_returned():
    assert outcome(0, 0, stopped="node i-0 was replaced") == 1
    assert outcome(5, stopped="node i-0 was replaced") == 1


def test_a_group_that_is_not_multi_node_runs_one_node_jobs_only():
    llm = load_stack_file(STACKS / "Pulumi.llm-infer.yaml")
    [servers] = llm.config.groups
    assert servers.max_size > 2 and not servers.multi_node

    assert new_job(llm, "servers", COMMAND, nodes=1).nodes == 1
    with pytest.raises(JobError, match="group servers is not multiNode"):
        new_job(llm, "servers", COMMAND, nodes=2)


def test_a_job_id_is_the_group_the_start_time_and_four_hex_digits():
    assert re.fullmatch(r"trainers-\d{14}-[0-9a-f]{4}", new_job(SETTINGS, "trainers", COMMAND).job_id)


class Aws:
    """Auto Scaling, EC2, SSM and S3 as the job commands call them, recording every request:
    `ready` instances in service, invocations answered by `invocation(command, instance, poll)`."""

    def __init__(self, clock: FakeClock, ready: int = 0, desired: int = 1, invocation=None):
        self.clock = clock
        self.ready = ready
        self.desired = desired
        self.group_exists = True
        self.invocation = invocation or (lambda command, instance, poll: {"Status": "Success", "ResponseCode": 0})
        self.polls: dict[str, int] = {}
        self.calls: list[tuple[str, dict]] = []
        self.refuse: dict[str, Exception] = {}

    def _call(self, name: str, request: dict):
        self.calls.append((name, request))
        if name in self.refuse:
            raise self.refuse[name]

    def clients(self) -> Clients:
        return Clients(autoscaling=self, ec2=self, ssm=self, logs=None, s3=self)

    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        self._call("describe_auto_scaling_groups", {})
        if not self.group_exists:
            return {"AutoScalingGroups": []}
        instances = [{"InstanceId": f"i-{index}", "LifecycleState": "InService"} for index in range(self.ready)]
        return {"AutoScalingGroups": [{"MaxSize": 4, "DesiredCapacity": self.desired, "Instances": instances}]}

    def set_desired_capacity(self, **request):
        self._call("set_desired_capacity", request)
        self.desired = request["DesiredCapacity"]

    def get_paginator(self, name):
        return Group.get_paginator(self, name)

    def send_command(self, **request):
        self._call("send_command", request)
        return {"Command": {"CommandId": f"command-{len(self.calls)}"}}

    def cancel_command(self, **request):
        self._call("cancel_command", request)

    def get_command_invocation(self, CommandId, InstanceId):
        self.polls[InstanceId] = self.polls.get(InstanceId, 0) + 1
        return self.invocation(CommandId, InstanceId, self.polls[InstanceId])

    def put_object(self, **request):
        self._call("put_object", request)

    def requests(self, name: str) -> list[dict]:
        return [request for called, request in self.calls if called == name]


def test_the_group_is_raised_without_waiting_for_its_cooldown_and_each_node_is_reached_for_600_s():
    clock = FakeClock()
    aws = Aws(clock, ready=2, desired=1)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2, job_id="trainers-20261128190000-0002")

    started = start(aws.clients(), SETTINGS, job, lambda line: None, clock, node_timeout=60, poll=15)

    assert aws.requests("set_desired_capacity") == [
        {"AutoScalingGroupName": job.group_name, "DesiredCapacity": 2, "HonorCooldown": False}]
    [sent] = aws.requests("send_command")
    assert sent["TimeoutSeconds"] == 600 and sent["InstanceIds"] == ["i-0", "i-1"]
    assert list(started.commands.values()) == [["i-0", "i-1"]]


def test_a_job_that_never_gets_its_nodes_lowers_the_group_back_without_waiting_for_its_cooldown():
    clock = FakeClock()
    aws = Aws(clock, ready=1, desired=1)
    said: list[str] = []
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    with pytest.raises(JobError, match="did not reach 2 nodes in service within 60 s"):
        start(aws.clients(), SETTINGS, job, said.append, clock, node_timeout=60, poll=15)

    assert [request["DesiredCapacity"] for request in aws.requests("set_desired_capacity")] == [2, 1]
    assert all(request["HonorCooldown"] is False for request in aws.requests("set_desired_capacity"))
    assert aws.requests("send_command") == []


@pytest.mark.parametrize("failure", [
    "refused",
    "unreachable",
    "gone",
])
def test_a_group_that_cannot_be_lowered_back_is_said_and_the_reason_the_job_did_not_start_stands(failure):
    clock = FakeClock()
    aws = Aws(clock, ready=1, desired=1)
    said: list[str] = []
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)
    described = aws.describe_auto_scaling_groups

    def describe_then_fail(**request):
        answer = described(**request)
        if aws.requests("set_desired_capacity") and clock.time >= 60:
            if failure == "gone":
                return {"AutoScalingGroups": []}
            aws.refuse["set_desired_capacity"] = (
                ClientError({"Error": {"Code": "ValidationError", "Message": "no"}}, "SetDesiredCapacity")
                if failure == "refused" else EndpointConnectionError(endpoint_url="https://autoscaling"))
        return answer

    aws.describe_auto_scaling_groups = describe_then_fail
    with pytest.raises(JobError, match="did not reach 2 nodes in service within 60 s"):
        start(aws.clients(), SETTINGS, job, said.append, clock, node_timeout=60, poll=15)

    assert any(line.startswith(f"could not lower {job.group_name} back to 1 nodes") for line in said), said


def started_on(*instances: str) -> Attempt:
    return Attempt(0, {"command-1": list(instances)}, [Node(iid, f"10.0.0.{index + 1}") for index, iid in enumerate(instances)])


def test_an_invocation_ssm_has_not_made_yet_is_pending_and_any_other_error_stops_the_watch():
    def invocation(command, instance, poll):
        if poll == 1:
            raise ClientError({"Error": {"Code": "InvocationDoesNotExist", "Message": "not yet"}}, "GetCommandInvocation")
        return {"Status": "Success", "ResponseCode": 0}

    clock = FakeClock()
    aws = Aws(clock, ready=2, invocation=invocation)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    results, lost = watch(aws.clients(), job, started_on("i-0", "i-1"), clock, poll=15)

    assert [(result.status, result.exit_code) for result in results] == [("Success", 0), ("Success", 0)] and lost == []
    assert clock.time == 15, "one wait, while the invocations did not exist yet"

    def throttled(command, instance, poll):
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GetCommandInvocation")

    with pytest.raises(ClientError, match="slow down"):
        watch(Aws(clock, ready=2, invocation=throttled).clients(), job, started_on("i-0", "i-1"), clock)


@pytest.mark.parametrize("invocation", [
    {"Status": "Cancelled", "ResponseCode": -1},
    {"Status": "TimedOut", "ResponseCode": -1},
    {"Status": "Cancelled"},
])
def test_a_node_whose_command_ended_without_an_exit_status_has_none_and_the_job_exits_1(invocation):
    clock = FakeClock()
    answers = {"i-0": {"Status": "Success", "ResponseCode": 0}, "i-1": invocation}
    aws = Aws(clock, ready=2, invocation=lambda command, instance, poll: answers[instance])
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    results, lost = watch(aws.clients(), job, started_on("i-0", "i-1"), clock)

    assert [result.exit_code for result in results] == [0, None] and lost == []
    assert Outcome(job, results).exit_code == 1


def test_a_job_that_succeeded_everywhere_ends_though_a_node_left_service_since():
    clock = FakeClock()
    aws = Aws(clock, ready=1)
    job = new_job(SETTINGS, "trainers", COMMAND, nodes=2)

    results, lost = watch(aws.clients(), job, started_on("i-0", "i-1"), clock)

    assert [result.exit_code for result in results] == [0, 0] and lost == []
    assert Outcome(job, results).exit_code == 0
