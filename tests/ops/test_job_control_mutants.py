"""What `gpucloud stop` and `gpucloud logs` decide about a job, each at its edge, with fake clients:
which attempt `stop` stops and when it leaves a job alone because it already ended, which
commands of a job that never started it cancels, how many nodes a job found again by its
commands has, and which attempt `logs --follow` waits on. The moto runs of the same commands are
in test_jobs.py; these are the edges every mutant of ops/job_control.py showed unguarded there."""

from __future__ import annotations

import io

import pytest
from botocore.exceptions import ClientError

from gpucloud.config import load_stack_file
from gpucloud.naming import job_log_group_name
from gpucloud.ops.job_control import logs, stop
from gpucloud.ops.jobs import Attempt, Clients, Clock, Job, JobError
from gpucloud.ops.nodes import Node
from support import STACKS

SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
WITHOUT_PREFIX = SETTINGS.model_copy(update={"config": SETTINGS.config.model_copy(update={"data": None})})
JOB_ID = "trainers-20261128230000-ab12"
GROUP = "gpu-cloud-vision-train-trainers"


def refused(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


class Ssm:
    """Run Command as the job commands read it: `commands` (id -> status, comment, instance ids)
    and each invocation's status (`invocations`, missing: InvocationDoesNotExist)."""

    def __init__(self, commands=None, invocations=None, statuses=None):
        self.commands = commands or {}
        self.invocations = invocations or {}
        self.statuses = statuses  # an iterator of a command's statuses at each ListCommands
        self.cancelled: list[str] = []
        self.sent: list[dict] = []

    def listed(self, command_id):
        status, comment, instances = self.commands[command_id]
        if self.statuses is not None:
            status = next(self.statuses)
        return {"CommandId": command_id, "Status": status, "Comment": comment, "InstanceIds": instances}

    def list_commands(self, CommandId):
        return {"Commands": [self.listed(CommandId)] if CommandId in self.commands else []}

    def get_paginator(self, name):
        assert name == "list_commands"
        ssm = self

        class Pages:
            def paginate(self):
                return [{"Commands": [ssm.listed(command_id) for command_id in ssm.commands]}]

        return Pages()

    def cancel_command(self, CommandId):
        self.cancelled.append(CommandId)

    def get_command_invocation(self, CommandId, InstanceId):
        if (CommandId, InstanceId) not in self.invocations:
            raise refused("InvocationDoesNotExist", "GetCommandInvocation")
        return {"Status": self.invocations[(CommandId, InstanceId)]}

    def send_command(self, **request):
        self.sent.append(request)
        return {"Command": {"CommandId": f"stop-{len(self.sent)}"}}


class Fleet:
    """Auto Scaling and EC2: `in_service` instances, every instance at 10.0.0.<n + 1> for i-<n>."""

    def __init__(self, in_service=()):
        self.in_service = list(in_service)

    def describe_auto_scaling_groups(self, AutoScalingGroupNames):
        instances = [{"InstanceId": iid, "LifecycleState": "InService"} for iid in self.in_service]
        return {"AutoScalingGroups": [{"Instances": instances, "DesiredCapacity": len(instances)}]}

    def get_paginator(self, name):
        class Pages:
            def paginate(self, InstanceIds):
                instances = [{"InstanceId": iid, "PrivateIpAddress": address(iid)} for iid in InstanceIds]
                return [{"Reservations": [{"Instances": instances}]}]

        return Pages()


class Records:
    """S3 holding the job's record, and no attempt recorded by the supervisor."""

    def __init__(self, job: Job):
        self.body = job.to_json().encode("utf-8")

    def get_object(self, Bucket, Key):
        if not Key.endswith("/job.json"):
            raise refused("NoSuchKey", "GetObject")
        return {"Body": io.BytesIO(self.body)}


class Logs:
    """CloudWatch Logs: `events` per command id, answered `page` events a call."""

    def __init__(self, events, page=10, missing=False):
        self.events = events
        self.page = page
        self.missing = missing
        self.calls: list[dict] = []

    def filter_log_events(self, logGroupName, logStreamNamePrefix, nextToken=None):
        self.calls.append({"prefix": logStreamNamePrefix, "nextToken": nextToken})
        if self.missing:
            raise refused("ResourceNotFoundException", "FilterLogEvents")
        found = [event for event in self.events if event["logStreamName"].startswith(logStreamNamePrefix)]
        start = int(nextToken or 0)
        answer = {"events": found[start:start + self.page]}
        if start + self.page < len(found):
            answer["nextToken"] = str(start + self.page)
        return answer


def address(instance_id: str) -> str:
    return f"10.0.0.{int(instance_id[2:]) + 1}"


def nodes(*instance_ids: str) -> list[Node]:
    return [Node(iid, address(iid)) for iid in instance_ids]


def recorded(*attempts: Attempt) -> Job:
    return Job(job_id=JOB_ID, stack=SETTINGS.stack, group="trainers", group_name=GROUP, nodes=2,
               command=["python", "train.py"], attempts=list(attempts))


def clients(job: Job | None = None, ssm=None, fleet=None, log=None) -> Clients:
    fleet = fleet or Fleet()
    return Clients(autoscaling=fleet, ec2=fleet, ssm=ssm or Ssm(), logs=log, s3=Records(job) if job else None)


FIRST = Attempt(0, {"cmd-0": ["i-1", "i-2"]}, nodes("i-1", "i-2"))
SECOND = Attempt(1, {"cmd-1": ["i-1", "i-3"]}, nodes("i-1", "i-3"))


@pytest.mark.parametrize("running", ["InProgress", "Pending", "Delayed"])
def test_stop_stops_the_last_attempt_while_one_of_its_nodes_still_runs(running):
    ssm = Ssm(invocations={("cmd-1", "i-1"): "Success", ("cmd-1", "i-3"): running})
    said: list[str] = []

    stop(clients(recorded(FIRST, SECOND), ssm, Fleet(["i-1", "i-3"])), SETTINGS, JOB_ID, say=said.append)

    assert ssm.cancelled == ["cmd-1"]
    [sent] = ssm.sent
    assert sent["InstanceIds"] == ["i-1", "i-3"] and sent["Parameters"]["action"] == ["launch-stop"]
    assert said == [f"job {JOB_ID}: cancelled command cmd-1; launch-stop sent to i-1 (10.0.0.2), i-3 (10.0.0.4)"]


def test_stop_reads_an_invocation_ssm_has_not_made_yet_as_still_to_run():
    ssm = Ssm(invocations={("cmd-1", "i-1"): "Success"})

    stop(clients(recorded(FIRST, SECOND), ssm, Fleet(["i-1", "i-3"])), SETTINGS, JOB_ID, say=lambda line: None)

    assert ssm.cancelled == ["cmd-1"]


@pytest.mark.parametrize("ended", ["Success", "Failed", "Cancelled", "TimedOut"])
def test_stop_leaves_a_job_whose_last_attempt_ended_on_every_node(ended):
    ssm = Ssm(invocations={("cmd-0", "i-1"): "InProgress", ("cmd-0", "i-2"): "InProgress",
                           ("cmd-1", "i-1"): "Success", ("cmd-1", "i-3"): ended})
    said: list[str] = []

    stop(clients(recorded(FIRST, SECOND), ssm, Fleet(["i-1", "i-3"])), SETTINGS, JOB_ID, say=said.append)

    assert ssm.cancelled == [] and ssm.sent == []
    assert said == [f"job {JOB_ID} already ended (i-1: Success, i-3: {ended})"]


def test_stop_sends_launch_stop_only_to_the_nodes_still_in_service():
    ssm = Ssm(invocations={("cmd-1", "i-1"): "InProgress", ("cmd-1", "i-3"): "InProgress"})
    said: list[str] = []

    stop(clients(recorded(FIRST, SECOND), ssm, Fleet(["i-3", "i-9"])), SETTINGS, JOB_ID, say=said.append)

    assert [sent["InstanceIds"] for sent in ssm.sent] == [["i-3"]]
    assert said[-1].endswith("launch-stop sent to i-3 (10.0.0.4)")


def test_stop_of_a_job_that_never_started_cancels_only_its_running_preflight_commands():
    marker = f"gpucloud job {JOB_ID} preflight"
    ssm = Ssm(commands={
        "pre-1": ("InProgress", f"{marker} round 1", ["i-1"]),
        "pre-2": ("Pending", f"{marker} round 1", ["i-2"]),
        "pre-3": ("Cancelling", f"{marker} round 2", ["i-3"]),
        "pre-done": ("Success", f"{marker} round 0", ["i-1"]),
        "other-job": ("InProgress", "gpucloud job trainers-20261128220000-ffff preflight round 1", ["i-4"]),
        "no-comment": ("InProgress", None, ["i-5"]),
    })

    with pytest.raises(JobError, match=rf"^job '{JOB_ID}' never started on a node; "
                                       r"cancelled its preflight's command pre-1, pre-2, pre-3$"):
        stop(clients(recorded(), ssm), SETTINGS, JOB_ID, say=lambda line: None)

    assert ssm.cancelled == ["pre-1", "pre-2", "pre-3"]


def test_stop_of_a_job_that_never_started_and_has_no_preflight_running_says_only_that():
    ssm = Ssm(commands={"pre-done": ("Failed", f"gpucloud job {JOB_ID} preflight round 0", ["i-1"])})

    with pytest.raises(JobError, match=rf"^job '{JOB_ID}' never started on a node$"):
        stop(clients(recorded(), ssm), SETTINGS, JOB_ID, say=lambda line: None)

    assert ssm.cancelled == []


def test_a_job_without_a_record_is_found_again_on_its_last_attempt_s_nodes():
    marker = f"gpucloud job {JOB_ID} attempt "
    ssm = Ssm(commands={
        "cmd-0": ("Failed", f"{marker}0", ["i-1", "i-2", "i-3"]),
        "cmd-1a": ("InProgress", f"{marker}1", ["i-1", "i-3"]),
        "cmd-1b": ("InProgress", f"{marker}1", ["i-4"]),
        "elsewhere": ("InProgress", "gpucloud job trainers-20261128220000-ffff attempt 0", ["i-6"]),
    }, invocations={("cmd-1a", "i-1"): "Success", ("cmd-1a", "i-3"): "Success", ("cmd-1b", "i-4"): "Success"})
    said: list[str] = []

    job = stop(clients(None, ssm), WITHOUT_PREFIX, JOB_ID, say=said.append)

    assert job.group == "trainers" and job.group_name == GROUP
    assert job.nodes == 3
    assert [(attempt.attempt, attempt.commands) for attempt in job.attempts] == [
        (0, {"cmd-0": ["i-1", "i-2", "i-3"]}), (1, {"cmd-1a": ["i-1", "i-3"], "cmd-1b": ["i-4"]})]
    assert [node.instance_id for node in job.attempts[1].nodes] == ["i-1", "i-3", "i-4"]
    assert said == [f"job {JOB_ID} already ended (i-1: Success, i-3: Success, i-4: Success)"]


class Sleeps(list):
    """The seconds `logs` slept, in order; a wait past ten polls is a test failure, not a hang."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        assert len(self) <= 10, "logs --follow still waiting after ten polls"


@pytest.mark.parametrize("group", ["trainers", "big-trainers", "a-b-c"])
def test_a_job_without_a_record_is_found_in_the_group_its_id_names(group):
    job_id = f"{group}-20261128230000-ab12"
    ssm = Ssm(commands={"cmd-0": ("Success", f"gpucloud job {job_id} attempt 0", ["i-1"])},
              invocations={("cmd-0", "i-1"): "Success"})

    job = stop(clients(None, ssm), WITHOUT_PREFIX, job_id, say=lambda line: None)

    assert job.group == group and job.group_name == f"gpu-cloud-vision-train-{group}"


def event(command_id: str, instance_id: str, at: int, message: str) -> dict:
    return {"eventId": f"{command_id}-{instance_id}-{at}", "logStreamName": f"{command_id}/{instance_id}/launch/stdout",
            "timestamp": at, "message": message + "\n"}


def test_logs_follow_waits_on_the_last_attempt_only_and_pages_through_every_event():
    events = [event("cmd-0", "i-2", 5, "first attempt"), *(event("cmd-1", "i-3", at, f"step {at}") for at in range(1, 4)),
              event("cmd-1", "i-1", 9, "done")]
    ssm = Ssm(commands={"cmd-0": ("InProgress", "", ["i-1", "i-2"]), "cmd-1": ("InProgress", "", ["i-1", "i-3"])},
              statuses=iter(["InProgress", "Cancelling", "Success"]))
    log = Logs(events, page=2)
    sleeps = Sleeps()
    printed: list[str] = []

    logs(clients(recorded(FIRST, SECOND), ssm, log=log), SETTINGS, JOB_ID, follow=True, say=printed.append,
         clock=Clock(now=lambda: 0.0, sleep=sleeps))

    assert sleeps == [5.0, 5.0]
    assert printed == ["[attempt 0 node 1 10.0.0.3 stdout] first attempt",
                       "[attempt 1 node 1 10.0.0.4 stdout] step 1", "[attempt 1 node 1 10.0.0.4 stdout] step 2",
                       "[attempt 1 node 1 10.0.0.4 stdout] step 3", "[attempt 1 node 0 10.0.0.2 stdout] done"]
    assert [call["nextToken"] for call in log.calls[:3]] == [None, None, "2"]


def test_logs_without_follow_read_each_attempt_once():
    ssm = Ssm(commands={"cmd-1": ("InProgress", "", ["i-1", "i-3"])})
    sleeps = Sleeps()
    printed: list[str] = []

    logs(clients(recorded(SECOND), ssm, log=Logs([event("cmd-1", "i-1", 1, "step 1")])), SETTINGS, JOB_ID,
         say=printed.append, clock=Clock(now=lambda: 0.0, sleep=sleeps))

    assert sleeps == [] and printed == ["[attempt 1 node 0 10.0.0.2 stdout] step 1"]


def test_logs_of_a_job_whose_log_group_is_not_there_yet_say_no_output():
    printed: list[str] = []

    logs(clients(recorded(SECOND), Ssm(), log=Logs([], missing=True)), SETTINGS, JOB_ID, say=printed.append)

    assert printed == [f"job {JOB_ID}: no output yet in log group {job_log_group_name(SETTINGS.name_base)}"]
