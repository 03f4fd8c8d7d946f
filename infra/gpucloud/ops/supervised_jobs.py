"""`gpucloud run` through the stack's job supervisor (documents/job_supervisor.py): the job runs
as an execution of a Step Functions state machine in the stack's account, named by the job id.
`run --detach` starts it and returns; `run` starts it and follows it (attaching is only a view: a
follower that dies, with the laptop that ran it, changes nothing); `jobs` lists the stack's
executions; `stop` (ops/job_control.py) stops the execution before it stops the commands.

Each attempt's record is `<checkpoint URI>attempts/<n>.json`, written by the supervisor; the job's
own record `<checkpoint URI>job.json` is written here, before the execution starts. The preflight's
figures of a round that did not pass are under `<checkpoint URI>preflight/`, one object per node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.documents.job_supervisor import supervisor_input
from gpucloud.documents.jobs import PREFLIGHT_ACTIONS
from gpucloud.naming import autoscaling_group_name, job_supervisor_name
from gpucloud.ops.job_records import Attempt, Clients, Clock, Job, JobError, checkpoint_uri, record, record_location
from gpucloud.ops.jobs import NodeResult, Outcome
from gpucloud.ops.nodes import Node
from gpucloud.ops.preflight_run import figure_line, node_result

PREFLIGHTS = {"off": "off", "quick": "preflight", "full": "preflight-full", "fabric": "preflight-fabric"}
"""`run --preflight` -> the job document's action the supervisor's Preflight step sends
(documents/jobs.py PREFLIGHT_ACTIONS); `off` skips the step."""
RUNNING = "RUNNING"


def default_preflight(settings: StackSettings, group_name: str) -> str:
    """`quick` on a multiNode group (by its Auto Scaling name), whose jobs depend on the fabric
    between nodes; `off` elsewhere (a one-node group's job has no fabric to test, and a quick round
    costs some 30 s: benchmarks/preflight_time.py)."""
    found = [candidate for candidate in settings.config.groups
             if autoscaling_group_name(settings.name_base, candidate.name) == group_name]
    return "quick" if found and found[0].multi_node else "off"


def state_machine_arn(settings: StackSettings, group_arn: str) -> str:
    """The stack's supervisor, in the partition and account of one of its groups (from the group's
    ARN, which the job commands read anyway: no STS call, no other permission)."""
    partition, account = group_arn.split(":")[1], group_arn.split(":")[4]
    return f"arn:{partition}:states:{settings.region}:{account}:stateMachine:{job_supervisor_name(settings.name_base)}"


def stack_state_machine_arn(clients: Clients, settings: StackSettings) -> str:
    """The stack's supervisor, found through the stack's first group."""
    name = autoscaling_group_name(settings.name_base, settings.config.groups[0].name)
    found = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    if not found:
        raise JobError(f"Auto Scaling group {name} does not exist: deploy the stack first (pulumi up)")
    return state_machine_arn(settings, found[0]["AutoScalingGroupARN"])


def execution_arn(machine_arn: str, job_id: str) -> str:
    """An execution's ARN is its state machine's with `execution` and the execution's name."""
    return machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{job_id}"


def _check_group(clients: Clients, job: Job) -> tuple[str, int]:
    """The job's group's ARN and desired capacity, once it exists and takes the job's nodes."""
    found = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[job.group_name])["AutoScalingGroups"]
    if not found:
        raise JobError(f"Auto Scaling group {job.group_name} does not exist: deploy the stack first (pulumi up)")
    if job.nodes > found[0]["MaxSize"]:
        raise JobError(f"--nodes {job.nodes} is above {job.group_name}'s MaxSize {found[0]['MaxSize']} (a schedule may "
                       "have lowered it): ask for fewer nodes or raise it")
    return found[0]["AutoScalingGroupARN"], found[0]["DesiredCapacity"]


def start(clients: Clients, settings: StackSettings, job: Job, max_restarts: int = 3, node_timeout: float = 1800.0,
          poll: int = 60, preflight: str | None = None, polls_per_execution: int | None = None) -> str:
    """Record the job and start its supervision; returns the execution's ARN. Without `preflight`,
    the group's default (`default_preflight`)."""
    if preflight is None:
        preflight = default_preflight(settings, job.group_name)
    if preflight not in PREFLIGHTS:
        raise JobError(f"--preflight {preflight!r}: one of {', '.join(PREFLIGHTS)}")
    assert all(action == "off" or action in PREFLIGHT_ACTIONS for action in PREFLIGHTS.values())
    group_arn, desired = _check_group(clients, job)
    parameters = {name: value for name, [value] in job.parameters(0, []).items()}
    launch = {name: parameters[name] for name in ("port", "gpusPerNode", "image", "checkpointUri", "commandB64")}
    machine = state_machine_arn(settings, group_arn)
    job.execution = execution_arn(machine, job.job_id)
    record(clients, job)
    started = clients.states.start_execution(
        stateMachineArn=machine, name=job.job_id,
        input=json.dumps(supervisor_input(job_id=job.job_id, group_name=job.group_name, nodes=job.nodes, launch=launch,
                                          max_restarts=max_restarts, node_timeout=int(node_timeout),
                                          poll_seconds=poll, preflight=PREFLIGHTS[preflight],
                                          polls=polls_per_execution, desired_found=desired)))
    return started["executionArn"]


def attempts(clients: Clients, uri: str | None) -> list[Attempt]:
    """The attempts the supervisor recorded under a job's checkpoint URI, in order (none without one)."""
    from botocore.exceptions import ClientError

    found: list[Attempt] = []
    if not uri:
        return found
    bucket, key = record_location(uri)
    folder = key.removesuffix("job.json")
    while True:
        try:
            body = clients.s3.get_object(Bucket=bucket, Key=f"{folder}attempts/{len(found)}.json")["Body"].read()
        except ClientError as error:
            if error.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return found
            raise
        found.append(attempt_from_record(json.loads(body)))


def attempt_from_record(item: dict[str, Any]) -> Attempt:
    """An attempt as the supervisor's RecordBody state writes it."""
    nodes = [Node(instance, address) for instance, address in zip(item["instanceIds"], item["privateIps"])]
    return Attempt(item["attempt"], {command["commandId"]: list(command["instanceIds"]) for command in item["commands"]},
                   nodes)


@dataclass(frozen=True)
class Execution:
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None


def describe(clients: Clients, arn: str) -> Execution:
    answer = clients.states.describe_execution(executionArn=arn)
    output = json.loads(answer["output"]) if answer.get("output") else None
    return Execution(answer["status"], output, answer.get("error"), answer.get("cause"))


def follow(clients: Clients, job: Job, arn: str, say: Callable[[str], None] = print, clock: Clock | None = None,
           poll: float = 15.0) -> Outcome:
    """Print each attempt as the supervisor starts it, until the execution ends (following each
    continuation it hands the job to); the job's outcome."""
    clock = clock or Clock()
    shown = 0
    figures: set[str] = set()
    while True:
        execution = describe(clients, arn)
        if execution.output and "continuedAs" in execution.output:
            arn = execution.output["continuedAs"]
            continue
        for line in preflight_figures(clients, job.checkpoint_uri, figures):
            say(line)
        job.attempts = attempts(clients, job.checkpoint_uri)
        for attempt in job.attempts[shown:]:
            say(f"job {job.job_id} attempt {attempt.attempt}: command {', '.join(attempt.commands)} on " + ", ".join(
                f"node {rank} {node.private_ip} ({node.instance_id})" for rank, node in enumerate(attempt.nodes)))
        shown = len(job.attempts)
        if execution.status != RUNNING:
            return outcome(job, execution)
        clock.sleep(poll)


def preflight_figures(clients: Clients, uri: str | None, seen: set[str]) -> list[str]:
    """One line per node result of the preflight the supervisor kept since `seen` (which grows),
    labelled `attempt-<a>/try-<t>/round-<r>`."""
    if not uri:
        return []
    bucket, key = record_location(uri)
    prefix = key.removesuffix("job.json") + "preflight/"
    lines = []
    for page in clients.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if item["Key"] in seen:
                continue
            seen.add(item["Key"])
            text = clients.s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode("utf-8", "replace")
            result = node_result({"StandardOutputContent": text})
            where = item["Key"][len(prefix):].rsplit("/", 1)[0]
            lines.append(f"preflight {where}: " + (figure_line(result) if result else
                                                     f"{item['Key'].rsplit('/', 1)[1][:-4]}: no result in its output"))
    return lines


def _results(job: Job, nodes: list[dict[str, Any]]) -> list[NodeResult]:
    addresses = {node.instance_id: node.private_ip for attempt in job.attempts for node in attempt.nodes}
    return [NodeResult(rank, Node(node["instanceId"], addresses.get(node["instanceId"], "?")), node["status"],
                       node["code"] if node["status"] in ("Success", "Failed", "Cancelled", "TimedOut")
                       and node["code"] >= 0 else None)
            for rank, node in enumerate(nodes)]


def outcome(job: Job, execution: Execution) -> Outcome:
    """The job's outcome as `run` reports it: its nodes' exit statuses, or why it stopped."""
    if execution.status == "SUCCEEDED" and execution.output:
        return Outcome(job, _results(job, execution.output["nodes"]))
    if execution.error == "failed" and execution.cause:
        listed = re.search(r"(\[.*\])$", execution.cause)
        if listed:
            return Outcome(job, _results(job, json.loads(listed.group(1))))
    reason = execution.cause or f"the supervision ended {execution.status}"
    return Outcome(job, [], stopped=f"job {job.job_id} stopped: {reason}" if not reason.startswith("job ") else reason)


CONTINUATION = re.compile(r"^(?P<job>.+)-(g[0-9]+|ri-[0-9a-f]+)$")
"""A continuation's execution name: `<job id>-g<generation>` or `<job id>-r<instance id>`
(documents/job_supervisor_continuation.py)."""


def job_of(execution_name: str) -> str:
    match = CONTINUATION.match(execution_name)
    return match.group("job") if match else execution_name


def executions(clients: Clients, machine: str, status: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The machine's executions (with `status`, e.g. RUNNING) by job id, newest first."""
    found: dict[str, list[dict[str, Any]]] = {}
    request = {"stateMachineArn": machine, **({"statusFilter": status} if status else {})}
    for page in clients.states.get_paginator("list_executions").paginate(**request):
        for item in page["executions"]:
            found.setdefault(job_of(item["name"]), []).append(item)
    return {job: sorted(items, key=lambda item: item["startDate"], reverse=True) for job, items in found.items()}


def jobs(clients: Clients, settings: StackSettings) -> list[dict[str, Any]]:
    """The stack's jobs, newest first: id, state (of its newest supervision), attempts and nodes."""
    rows = []
    for job_id, items in executions(clients, stack_state_machine_arn(clients, settings)).items():
        described = [clients.states.describe_execution(executionArn=item["executionArn"]) for item in items]
        # an execution an Auto Scaling event started supervises no job of its own
        supervising = [answer for answer in described if "detail" not in json.loads(answer["input"])]
        if not supervising:
            continue
        newest = supervising[0]
        done = attempts(clients, checkpoint_uri(settings, job_id))
        rows.append({"job": job_id, "state": newest["status"], "started": supervising[-1]["startDate"],
                     "attempts": len(done), "nodes": json.loads(newest["input"])["job"]["nodes"],
                     "supervisions": len(supervising),
                     "addresses": [node.private_ip for node in done[-1].nodes] if done else []})
    return sorted(rows, key=lambda row: row["started"], reverse=True)


def job_of_execution(clients: Clients, settings: StackSettings, job_id: str) -> Job | None:
    """A job that has neither record nor command (a stack without a write prefix, before its
    launch), from its supervision's input; None when the stack's supervisor has no such execution."""
    from botocore.exceptions import ClientError

    arn = execution_arn(stack_state_machine_arn(clients, settings), job_id)
    try:
        answer = clients.states.describe_execution(executionArn=arn)
    except ClientError as error:
        if error.response["Error"]["Code"] == "ExecutionDoesNotExist":
            return None
        raise
    supervised = json.loads(answer["input"])["job"]
    return Job(job_id=job_id, stack=settings.stack, group=job_id.rsplit("-", 2)[0], group_name=supervised["groupName"],
               nodes=supervised["nodes"], command=[], execution=arn)


def give_back(clients: Clients, job: Job) -> str:
    """After `stop` of a job that never started: its group back at the desired capacity `run` found,
    as the supervisor's own ends before the start do (documents/job_supervisor_capacity.py), and
    only while the group is still at the job's N, which the supervisor set: a capacity someone
    changed meanwhile stays. Says what it did."""
    if not job.execution:
        return ""
    found = json.loads(clients.states.describe_execution(executionArn=job.execution)["input"])["job"].get("desiredFound")
    if found is None or found >= job.nodes:
        return ""
    groups = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[job.group_name])["AutoScalingGroups"]
    if not groups or groups[0]["DesiredCapacity"] != job.nodes:
        return ""
    clients.autoscaling.set_desired_capacity(AutoScalingGroupName=job.group_name, DesiredCapacity=found,
                                             HonorCooldown=False)
    return f"; group {job.group_name} is back at the desired capacity {found} it had before the job"


def stop_supervision(clients: Clients, job: Job, say: Callable[[str], None]) -> None:
    """StopExecution of every running supervision of the job (its continuations included), so that
    none sends a next attempt. A job without a record (no write prefix) is stopped by its commands
    alone: the supervisor then reads them Cancelled and ends the job as failed."""
    if not job.execution:
        return
    machine = job.execution.replace(":execution:", ":stateMachine:", 1).rsplit(":", 1)[0]
    for item in executions(clients, machine, status=RUNNING).get(job.job_id, []):
        clients.states.stop_execution(executionArn=item["executionArn"], error="stopped",
                                      cause=f"gpucloud stop --job {job.job_id}")
        say(f"job {job.job_id}: stopped its supervision {item['name']}")
