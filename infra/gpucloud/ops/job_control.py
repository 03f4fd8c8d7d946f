"""`gpucloud logs` and `gpucloud stop`: a running or finished job found again by its id.

A job is found by its record (`<write prefix>jobs/<job id>/job.json`, written by `run`); a stack
without a write prefix keeps no record, and the job is found by its commands' comment instead
(`gpucloud job <id> attempt <n>`, which `run` sets on each of an attempt's commands, one per 50
nodes; Run Command keeps commands 30 days), or before its launch by its supervision's input.
Run Command writes each node's output to the job log group as the streams
`<command id>/<instance id>/<step>/stdout` and `.../stderr`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.naming import autoscaling_group_name, job_log_group_name
from gpucloud.ops.jobs import DEPLOY_FIRST, TERMINAL, Attempt, Clients, Clock, Job, JobError, checkpoint_uri, record_location, stop_attempt
from gpucloud.ops.node_phases import phase_reader
from gpucloud.ops.nodes import Node, ordered_nodes, where_nodes_are
from gpucloud.ops.supervised_jobs import attempts, give_back, job_of_execution, stop_supervision

RUNNING_COMMAND = frozenset({"Pending", "InProgress", "Cancelling"})
"""Command statuses while some node may still write output (SSM API reference, Command `Status`)."""


def find_job(clients: Clients, settings: StackSettings, job_id: str) -> Job:
    """The job's record, or (without a write prefix) the job rebuilt from its commands."""
    from botocore.exceptions import ClientError

    uri = checkpoint_uri(settings, job_id)
    if uri:
        bucket, key = record_location(uri)
        try:
            body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "NoSuchBucket":
                raise JobError(f"no job {job_id} in stack {settings.stack}: its bucket {bucket} (gpu-cloud:data.bucket) "
                               f"does not exist: create it and {DEPLOY_FIRST}, then `gpucloud run`") from None
            if code in ("NoSuchKey", "404"):
                raise JobError(f"no job {job_id} in stack {settings.stack} (nothing at {uri}job.json)") from None
            if code in ("AccessDenied", "403"):
                raise JobError(f"no job {job_id} in stack {settings.stack}, or your credentials may not read {uri}job.json: "
                               "S3 answers AccessDenied for a missing key to a caller without s3:ListBucket there "
                               "(the stack's job-runner policy grants it)") from None
            raise
        job = Job.from_json(body.decode("utf-8"))
        job.attempts = job.attempts or attempts(clients, uri)
        return job
    return _job_from_commands(clients, settings, job_id)


def _job_from_commands(clients: Clients, settings: StackSettings, job_id: str) -> Job:
    marker = f"gpucloud job {job_id} attempt "
    commands: list[dict[str, Any]] = []
    for page in clients.ssm.get_paginator("list_commands").paginate():
        commands += [command for command in page["Commands"] if (command.get("Comment") or "").startswith(marker)]
    if not commands:
        if supervised := job_of_execution(clients, settings, job_id):
            return supervised
        raise JobError(f"no job {job_id} in stack {settings.stack}: Run Command has no command for it "
                       "(it keeps commands 30 days)")
    group = job_id.rsplit("-", 2)[0]
    job = Job(job_id=job_id, stack=settings.stack, group=group,
              group_name=autoscaling_group_name(settings.name_base, group), nodes=0, command=[])
    attempts: dict[int, dict[str, list[str]]] = {}
    for command in commands:
        attempts.setdefault(int(command["Comment"][len(marker):] or 0), {})[command["CommandId"]] = list(command["InstanceIds"])
    for number, batches in sorted(attempts.items()):
        instance_ids = [instance for instances in batches.values() for instance in instances]
        job.attempts.append(Attempt(number, batches, ordered_nodes(clients.ec2, instance_ids)))
        job.nodes = len(instance_ids)
    return job


def _command_running(clients: Clients, attempt: Attempt) -> bool:
    """Whether any of the attempt's commands may still write output."""
    for command_id in attempt.commands:
        commands = clients.ssm.list_commands(CommandId=command_id)["Commands"]
        if commands and commands[0]["Status"] in RUNNING_COMMAND:
            return True
    return False


def _label(attempt: Attempt, stream: str) -> str:
    """`attempt 0 node 1 10.0.0.7 stdout` for a stream `<command>/<instance>/<step>/stdout`."""
    parts = stream.split("/")
    instance_id, kind = (parts[1], parts[-1]) if len(parts) >= 3 else ("?", stream)
    for rank, node in enumerate(attempt.nodes):
        if node.instance_id == instance_id:
            return f"attempt {attempt.attempt} node {rank} {node.private_ip} {kind}"
    return f"attempt {attempt.attempt} {instance_id} {kind}"


def logs(clients: Clients, settings: StackSettings, job_id: str, follow: bool = False,
         say: Callable[[str], None] = print, clock: Clock | None = None, poll: float = 5.0) -> Job:
    """Print the job's output, every attempt in order, each line labelled with its node; with
    `follow`, keep printing until the last attempt's command has ended on every node."""
    clock = clock or Clock()
    job = find_job(clients, settings, job_id)
    group = job_log_group_name(settings.name_base)
    printed = 0
    for index, attempt in enumerate(job.attempts):
        last = index == len(job.attempts) - 1
        seen: set[str] = set()
        while True:
            running = follow and last and _command_running(clients, attempt)
            for event in _attempt_events(clients, group, attempt):
                if event["eventId"] not in seen:
                    seen.add(event["eventId"])
                    say(f"[{_label(attempt, event['logStreamName'])}] {event['message'].rstrip()}")
                    printed += 1
            if not running:
                break
            clock.sleep(poll)
    if not printed:
        say(f"job {job_id}: no output yet " + (f"in log group {group}" if job.attempts else "(it has not started on a node)"))
        if not job.attempts:
            phases = phase_reader(clients.logs, group, job.group_name, whole_group=True)
            for line in where_nodes_are(clients.autoscaling, job.group_name, phases):
                say(f"  {line}")
    return job


def _attempt_events(clients: Clients, group: str, attempt: Attempt) -> list[dict[str, Any]]:
    """Every node's output of the attempt, all its commands, in time order."""
    events = [event for command_id in attempt.commands for event in _events(clients, group, command_id)]
    return sorted(events, key=lambda event: (event["timestamp"], event["logStreamName"]))


def _events(clients: Clients, group: str, command_id: str) -> list[dict[str, Any]]:
    from botocore.exceptions import ClientError

    events: list[dict[str, Any]] = []
    request = {"logGroupName": group, "logStreamNamePrefix": f"{command_id}/"}
    try:
        while True:
            page = clients.logs.filter_log_events(**request)
            events += [event for event in page.get("events", []) if event["logStreamName"].startswith(request["logStreamNamePrefix"])]
            if not page.get("nextToken") or page["nextToken"] == request.get("nextToken"):
                break
            request["nextToken"] = page["nextToken"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return []
        raise
    return sorted(events, key=lambda event: (event["timestamp"], event["logStreamName"]))


def stop(clients: Clients, settings: StackSettings, job_id: str, say: Callable[[str], None] = print) -> Job:
    """Stop the job's supervision, then cancel its last attempt and stop its processes on the nodes
    still in service; a job that never started gets its preflight's commands cancelled and its group
    lowered back instead (`give_back`)."""
    job = find_job(clients, settings, job_id)
    stop_supervision(clients, job, say)
    if not job.attempts:
        cancelled = _cancel_preflight(clients, job)
        raise JobError(f"job {job_id!r} never started on a node" + (
            f"; cancelled its preflight's command {', '.join(cancelled)}" if cancelled else "") + give_back(clients, job))
    last = job.attempts[-1]
    statuses = {node.instance_id: _status(clients, last.command_of(node.instance_id), node) for node in last.nodes}
    if all(status in TERMINAL for status in statuses.values()):
        say(f"job {job_id} already ended (" + ", ".join(f"{iid}: {status}" for iid, status in statuses.items()) + ")")
        return job
    stopped = stop_attempt(clients, settings, job, last)
    say(f"job {job_id}: cancelled command {', '.join(last.commands)}; launch-stop sent to "
        + (", ".join(f"{node.instance_id} ({node.private_ip})" for node in stopped) or "no node still in service"))
    return job


def _cancel_preflight(clients: Clients, job: Job) -> list[str]:
    """The commands of a job that never started still running (its preflight's: the supervisor's
    comments `gpucloud job <id> preflight…`), cancelled."""
    marker = f"gpucloud job {job.job_id} preflight"
    running = [command["CommandId"] for page in clients.ssm.get_paginator("list_commands").paginate()
               for command in page["Commands"]
               if (command.get("Comment") or "").startswith(marker) and command["Status"] in RUNNING_COMMAND]
    for command_id in running:
        clients.ssm.cancel_command(CommandId=command_id)
    return running


def _status(clients: Clients, command_id: str, node: Node) -> str:
    from botocore.exceptions import ClientError

    try:
        return clients.ssm.get_command_invocation(CommandId=command_id, InstanceId=node.instance_id)["Status"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "InvocationDoesNotExist":
            return "Pending"
        raise
