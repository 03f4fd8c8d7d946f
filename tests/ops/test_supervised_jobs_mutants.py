"""What `run`, `jobs` and `stop` decide from the supervisor's executions, each at its edge, with
fake clients: a stop's give-back when the group already had the job's N nodes, a kept preflight
output without a result line, a node without an exit status, the job a continuation belongs to,
and the job a stop finds by its supervision alone. The moto runs of the same commands are in
test_job_supervisor*.py; these are the edges they leave unguarded."""

from __future__ import annotations

import io
import json

import pytest
from botocore.exceptions import ClientError

from gpucloud.config import load_stack_file
from gpucloud.ops.job_records import Attempt, Clients, Clock, Job, JobError
from gpucloud.ops.nodes import Node
from gpucloud.ops.supervised_jobs import (
    Execution,
    attempts,
    follow,
    give_back,
    job_of,
    job_of_execution,
    jobs,
    outcome,
    preflight_figures,
    start,
)
from support import STACKS

SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
GROUP = "gpu-cloud-vision-train-trainers"
JOB_ID = "trainers-20261129010000-ab12"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:gpu-cloud-vision-train-jobs"


class AutoScaling:
    def __init__(self, desired: int, max_size: int = 8):
        self.desired, self.max_size = desired, max_size
        self.set: list[dict] = []

    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        return {"AutoScalingGroups": [{
            "DesiredCapacity": self.desired, "MaxSize": self.max_size,
            "AutoScalingGroupARN": f"arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0:autoScalingGroupName/{GROUP}"}]}

    def set_desired_capacity(self, **request):
        self.set.append(request)


class States:
    def __init__(self, executions: dict[str, dict]):
        self.executions = executions

    def get_paginator(self, name):
        executions = [{"executionArn": arn, "name": arn.rsplit(":", 1)[1], "startDate": answer["startDate"]}
                      for arn, answer in self.executions.items()]

        class Pages:
            def paginate(self, stateMachineArn, statusFilter=None):
                return [{"executions": executions}]

        return Pages()

    def describe_execution(self, executionArn):
        if executionArn not in self.executions:
            raise ClientError({"Error": {"Code": "ExecutionDoesNotExist", "Message": "no"}}, "DescribeExecution")
        return self.executions[executionArn]


def job(nodes: int = 3) -> Job:
    return Job(job_id=JOB_ID, stack="vision-train", group="trainers", group_name=GROUP, nodes=nodes, command=[],
               execution=f"{MACHINE.replace(':stateMachine:', ':execution:')}:{JOB_ID}")


def supervised(found: int | None, nodes: int = 3) -> dict:
    return {"input": json.dumps({"job": {"jobId": JOB_ID, "groupName": GROUP, "nodes": nodes,
                                         **({} if found is None else {"desiredFound": found})}})}


def test_a_stop_gives_back_only_what_the_supervisor_raised():
    for found, desired, expected in ((1, 3, [1]), (3, 3, []), (None, 3, []), (1, 2, [])):
        autoscaling = AutoScaling(desired)
        clients = Clients(autoscaling, None, None, None, None, States({job().execution: supervised(found)}))

        said = give_back(clients, job())

        assert autoscaling.set == [{"AutoScalingGroupName": GROUP, "DesiredCapacity": capacity, "HonorCooldown": False}
                                   for capacity in expected], (found, desired)
        assert ("back at the desired capacity" in said) == bool(expected)
    assert give_back(Clients(None, None, None, None, None, None), Job(
        job_id=JOB_ID, stack="vision-train", group="trainers", group_name=GROUP, nodes=3, command=[])) == ""


def test_a_job_found_by_its_supervision_alone_has_its_group_nodes_and_execution():
    clients = Clients(AutoScaling(1), None, None, None, None, States({job().execution: supervised(1, nodes=4)}))

    found = job_of_execution(clients, SETTINGS, JOB_ID)

    assert (found.group, found.group_name, found.nodes, found.execution) == ("trainers", GROUP, 4, job().execution)
    assert job_of_execution(clients, SETTINGS, "trainers-20261129010000-ffff") is None
    dashed = "big-trainers-20261129010000-ab12"
    arn = f"{MACHINE.replace(':stateMachine:', ':execution:')}:{dashed}"
    assert job_of_execution(Clients(AutoScaling(1), None, None, None, None, States({arn: supervised(1)})), SETTINGS,
                            dashed).group == "big-trainers", "a group's name may hold dashes"


def test_a_continuation_belongs_to_the_job_it_continues():
    assert job_of(f"{JOB_ID}-g12") == job_of(f"{JOB_ID}-ri-0123456789abcdef0") == job_of(JOB_ID) == JOB_ID


class S3:
    def __init__(self, objects: dict[str, str]):
        self.objects = objects

    def get_paginator(self, name):
        s3 = self

        class Pages:
            def paginate(self, Bucket, Prefix):
                return [{"Contents": [{"Key": key} for key in sorted(s3.objects) if key.startswith(Prefix)]}]

        return Pages()

    def get_object(self, Bucket, Key):
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "no"}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[Key].encode())}


def test_a_kept_preflight_output_without_a_result_line_is_named_by_its_node():
    uri = f"s3://example-vision-data/runs/vision-train/jobs/{JOB_ID}/"
    prefix = f"runs/vision-train/jobs/{JOB_ID}/preflight/"
    s3 = S3({f"{prefix}attempt-0/try-0/round-0/i-0123456789abcdef0.txt": "torchrun: not found\n"})
    seen: set[str] = set()

    lines = preflight_figures(Clients(None, None, None, None, s3), uri, seen)

    assert lines == ["preflight attempt-0/try-0/round-0: i-0123456789abcdef0: no result in its output"]
    assert preflight_figures(Clients(None, None, None, None, s3), uri, seen) == [], "each output once"
    s3.objects[f"{prefix}attempt-0/try-0/round-1/i-0123456789abcdef0.txt"] = "torchrun: not found\n"
    assert preflight_figures(Clients(None, None, None, None, s3), uri, seen) == [
        "preflight attempt-0/try-0/round-1: i-0123456789abcdef0: no result in its output"], "the next round's, after those seen"
    assert preflight_figures(Clients(None, None, None, None, s3), None, set()) == []


def test_a_node_without_an_exit_status_has_none_and_one_with_zero_has_zero():
    ran = job(2)
    ran.attempts = [Attempt(0, {"c": ["i-1", "i-2"]}, [Node("i-1", "10.0.0.1"), Node("i-2", "10.0.0.2")])]
    nodes = [{"instanceId": "i-1", "status": "Success", "code": 0},
             {"instanceId": "i-2", "status": "Cancelled", "code": -1}]

    failed = outcome(ran, Execution("FAILED", None, "failed", f"job {JOB_ID} failed on attempt 0: {json.dumps(nodes)}"))

    assert [(result.node.private_ip, result.exit_code) for result in failed.results] == [("10.0.0.1", 0), ("10.0.0.2", None)]
    assert failed.exit_code == 1 and failed.stopped is None
    running = outcome(ran, Execution("SUCCEEDED", {"nodes": [{"instanceId": "i-1", "status": "InProgress", "code": 0}]},
                                     None, None))
    assert [result.exit_code for result in running.results] == [None], "no exit status before the command ended"
    lost = (f"job {JOB_ID} stopped: a node left during attempt 0 and the stack has no data.writePrefixes, so there "
            f"is no checkpoint to resume from: {json.dumps(nodes)}")
    no_checkpoint = outcome(ran, Execution("FAILED", None, "no-checkpoint", lost))
    assert (no_checkpoint.results, no_checkpoint.stopped) == ([], lost), "only a failed command's end lists results"
    stopped = outcome(ran, Execution("ABORTED", None, None, None))
    assert stopped.stopped == f"job {JOB_ID} stopped: the supervision ended ABORTED" and stopped.exit_code == 1


def test_run_refuses_an_unknown_preflight_and_a_job_above_the_group_s_max_size_before_any_execution():
    clients = Clients(AutoScaling(1, max_size=3), None, None, None, None, None)
    with pytest.raises(JobError, match="--preflight 'slow': one of off, quick, full, fabric"):
        start(clients, SETTINGS, job(), preflight="slow")
    with pytest.raises(JobError, match="--nodes 4 is above .*MaxSize 3"):
        start(clients, SETTINGS, job(4), preflight="off")


FOLDER = f"runs/vision-train/jobs/{JOB_ID}/"


def recorded(attempt: int, instance: str, address: str) -> str:
    return json.dumps({"attempt": attempt, "commands": [{"commandId": f"c-{attempt}", "instanceIds": [instance]}],
                       "instanceIds": [instance], "privateIps": [address]})


def test_follow_prints_every_attempt_of_a_job_that_already_ended():
    s3 = S3({f"{FOLDER}attempts/0.json": recorded(0, "i-1", "10.0.0.1"),
             f"{FOLDER}attempts/1.json": recorded(1, "i-2", "10.0.0.2")})
    followed = job(1)
    followed.checkpoint_uri = f"s3://example-vision-data/{FOLDER}"
    states = States({followed.execution: {"status": "SUCCEEDED", "output": json.dumps(
        {"nodes": [{"instanceId": "i-2", "status": "Success", "code": 0}]})}})
    printed: list[str] = []

    result = follow(Clients(None, None, None, None, s3, states), followed, followed.execution, say=printed.append,
                    clock=Clock(sleep=lambda seconds: None))

    assert printed == [f"job {JOB_ID} attempt 0: command c-0 on node 0 10.0.0.1 (i-1)",
                       f"job {JOB_ID} attempt 1: command c-1 on node 0 10.0.0.2 (i-2)"]
    assert result.exit_code == 0
    assert attempts(Clients(None, None, None, None, s3), None) == [], "a job without a checkpoint URI has no record"


def test_jobs_shows_a_job_s_newest_supervision_and_when_its_first_began():
    arn = job().execution
    states = States({
        f"{arn[:-len(JOB_ID)]}event": {"startDate": 3, "status": "SUCCEEDED", "input": json.dumps({"detail": {}})},
        arn: {"startDate": 1, "status": "SUCCEEDED", "input": supervised(1)["input"]},
        f"{arn}-g1": {"startDate": 2, "status": "RUNNING", "input": supervised(1)["input"]}})
    s3 = S3({f"{FOLDER}attempts/0.json": recorded(0, "i-1", "10.0.0.1"),
             f"{FOLDER}attempts/1.json": recorded(1, "i-2", "10.0.0.2")})

    [row] = jobs(Clients(AutoScaling(3), None, None, None, s3, states), SETTINGS)

    assert (row["job"], row["state"], row["started"], row["supervisions"], row["attempts"], row["addresses"]) == (
        JOB_ID, "RUNNING", 1, 2, 2, ["10.0.0.2"]), "an event's execution is no job and hides none after it"


def test_jobs_lists_the_job_started_last_first_whatever_order_step_functions_lists_them_in():
    arn = job().execution
    later = "trainers-20261129020000-cd34"
    later_input = json.dumps({"job": {"jobId": later, "groupName": GROUP, "nodes": 2}})
    states = States({arn: {"startDate": 1, "status": "SUCCEEDED", "input": supervised(1)["input"]},
                     f"{arn[:-len(JOB_ID)]}{later}": {"startDate": 5, "status": "RUNNING", "input": later_input}})

    listed = jobs(Clients(AutoScaling(3), None, None, None, S3({}), states), SETTINGS)

    assert [(row["job"], row["nodes"]) for row in listed] == [(later, 2), (JOB_ID, 3)]
