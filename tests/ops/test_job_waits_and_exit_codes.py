"""What the job commands decide without AWS: how long `gpucloud preflight` waits for N nodes
before it gives up, how many nodes a job asks for by default and on which groups, and which exit
code the nodes' results make. Fake clients and a fake clock, so each verdict is checked at its
edge; what the job supervisor asks of Auto Scaling and SSM is checked where it runs, on moto
(test_jobs.py, test_job_supervisor.py)."""

from __future__ import annotations

import re

import pytest

from gpucloud.config import load_stack_file
from gpucloud.ops.jobs import (
    Clients,
    Clock,
    JobError,
    NodeResult,
    Outcome,
    new_job,
    wait_for_nodes,
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
