"""A command on N in-service nodes of a group through SSM Run Command, with the rendezvous every
launcher expects, resumed on a new set of nodes when one is replaced: the steps `gpucloud run`
takes, run in this process. `gpucloud run` itself hands them to the stack's job supervisor, which
runs the same steps in AWS (documents/job_supervisor.py, ops/supervised_jobs.py); `stop`, the
preflight and the supervisor's tests use the pieces here (`wait_for_nodes`, `stop_attempt`,
`Outcome`), and `run` below stays the in-process reference of what a job does.

What happens, in order: the group is raised to N nodes (within its maxSize) and `run` waits until
N are InService (past the health gate); the first N by private IPv4 address are the job's nodes,
the first the rendezvous master; the stack's job document goes to all of them at once (one command
per 50 nodes, the most SendCommand takes), output to the job log group; `run` reports each node's
exit status. When one of the job's nodes leaves service before the command ends
(spot interruption, an Xid fault the agent replaced), the other nodes' command is cancelled and
stopped, `run` waits for N nodes again and sends the job with the next attempt number and the same
checkpoint URI, up to `max_restarts` times; the launcher restores the last checkpoint from that
URI. Without a write prefix there is no checkpoint URI and the job stops instead, as it does when
the group does not get back to N nodes. A job that never starts (no N nodes in time, a send AWS
refused, an interrupt) leaves the group where `run` found it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.naming import job_document_name, job_log_group_name
from gpucloud.node.launcher import EXIT_DRAINED
from gpucloud.ops.job_records import (  # noqa: F401 (the job commands' names, imported from here)
    DEFAULT_PORT,
    Attempt,
    Clients,
    Clock,
    Job,
    JobError,
    checkpoint_uri,
    new_job,
    new_job_id,
    record,
    record_location,
)
from gpucloud.ops.nodes import Node, in_service_instance_ids, ordered_nodes

TERMINAL = frozenset({"Success", "Failed", "Cancelled", "TimedOut"})
"""Invocation statuses after which the command no longer runs on that node (SSM API reference,
GetCommandInvocation, `Status`; read 2026-11-25)."""
DEPLOY_FIRST = "deploy the stack first (pulumi up)"
"""What a job command says when something the stack deploys, or needs, is not there yet."""
DELIVERY_TIMEOUT_SECONDS = 600
"""How long SSM tries to reach a node before the invocation times out undelivered."""
SEND_COMMAND_MAX_INSTANCES = 50
"""SendCommand takes at most 50 instance ids (botocore's ssm model, `InstanceIdList` max 50; SSM API
reference, SendCommand `InstanceIds`; read 2026-11-28): a job on more nodes goes out as one command
per 50 of them, in rank order."""


def batches(nodes: Sequence[Node]) -> list[list[Node]]:
    """The nodes in rank order, SEND_COMMAND_MAX_INSTANCES at a time."""
    return [list(nodes[start:start + SEND_COMMAND_MAX_INSTANCES])
            for start in range(0, len(nodes), SEND_COMMAND_MAX_INSTANCES)]


def raise_capacity(clients: Clients, job: Job, say: Callable[[str], None]) -> int | None:
    """Raise the group's desired capacity to the job's node count (never lower it), within maxSize.
    Returns the desired capacity it found when it raised it, None when it left it alone."""
    found = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[job.group_name])["AutoScalingGroups"]
    if not found:
        raise JobError(f"Auto Scaling group {job.group_name} does not exist: {DEPLOY_FIRST}")
    group = found[0]
    if job.nodes > group["MaxSize"]:
        raise JobError(f"--nodes {job.nodes} is above {job.group_name}'s MaxSize {group['MaxSize']} (a schedule may "
                       "have lowered it): ask for fewer nodes or raise it")
    if group["DesiredCapacity"] < job.nodes:
        say(f"raising {job.group_name} from {group['DesiredCapacity']} to {job.nodes} nodes")
        clients.autoscaling.set_desired_capacity(AutoScalingGroupName=job.group_name, DesiredCapacity=job.nodes,
                                                 HonorCooldown=False)
        return group["DesiredCapacity"]
    return None


def lower_capacity(clients: Clients, job: Job, found: int, say: Callable[[str], None]) -> None:
    """Undo `raise_capacity` for a job that never started, unless the group's desired capacity has
    changed since (another run raised it further)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        [group] = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[job.group_name])["AutoScalingGroups"]
        if group["DesiredCapacity"] == job.nodes:
            say(f"lowering {job.group_name} back from {job.nodes} to {found} nodes: the job did not start")
            clients.autoscaling.set_desired_capacity(AutoScalingGroupName=job.group_name, DesiredCapacity=found,
                                                     HonorCooldown=False)
    except (BotoCoreError, ClientError, ValueError) as error:
        say(f"could not lower {job.group_name} back to {found} nodes ({error}): aws autoscaling set-desired-capacity "
            f"--auto-scaling-group-name {job.group_name} --desired-capacity {found}")


def wait_for_nodes(clients: Clients, job: Job, timeout: float, clock: Clock, poll: float = 15.0) -> list[Node] | None:
    """The job's nodes once N are in service (the first N by address), or None at the timeout."""
    deadline = clock.now() + timeout
    while True:
        in_service = in_service_instance_ids(clients.autoscaling, job.group_name)
        if len(in_service) >= job.nodes:
            return ordered_nodes(clients.ec2, in_service)[: job.nodes]
        if clock.now() >= deadline:
            return None
        clock.sleep(poll)


def _send_document(clients: Clients, settings: StackSettings, nodes: Sequence[Node], parameters: dict[str, list[str]],
                   comment: str) -> str:
    return clients.ssm.send_command(
        InstanceIds=[node.instance_id for node in nodes],
        DocumentName=job_document_name(settings.name_base),
        Parameters=parameters,
        Comment=comment,
        TimeoutSeconds=DELIVERY_TIMEOUT_SECONDS,
        CloudWatchOutputConfig={"CloudWatchLogGroupName": job_log_group_name(settings.name_base),
                                "CloudWatchOutputEnabled": True},
    )["Command"]["CommandId"]


def send(clients: Clients, settings: StackSettings, job: Job, attempt: int, nodes: list[Node]) -> Attempt:
    """Start one attempt of the job on `nodes`, output to the job log group. Should a batch fail,
    the batches already sent are stopped (their ranks would wait for the others forever) and the
    error goes on."""
    from botocore.exceptions import BotoCoreError, ClientError

    parameters = job.parameters(attempt, nodes)
    started = Attempt(attempt, {}, [])
    try:
        for batch in batches(nodes):
            command_id = _send_document(clients, settings, batch, parameters, f"gpucloud job {job.job_id} attempt {attempt}")
            started.commands[command_id] = [node.instance_id for node in batch]
            started.nodes += batch
    except BaseException:
        with contextlib.suppress(BotoCoreError, ClientError):  # the send's own error is the one to report
            stop_attempt(clients, settings, job, started)
        raise
    job.attempts.append(started)
    record(clients, job)
    return started


@dataclass(frozen=True)
class NodeResult:
    rank: int
    node: Node
    status: str
    exit_code: int | None


def _invocation(clients: Clients, command_id: str, instance_id: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        return clients.ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
    except ClientError as error:
        if error.response["Error"]["Code"] == "InvocationDoesNotExist":
            return {"Status": "Pending", "ResponseCode": -1}
        raise


def watch(clients: Clients, job: Job, started: Attempt, clock: Clock, poll: float = 15.0) -> tuple[list[NodeResult], list[Node]]:
    """Wait for the attempt to end on every node. Returns each node's result, and the nodes lost
    while it ran: those whose launcher exited EXIT_DRAINED (the node's drain stopped the job and
    saved its checkpoint, the node is going) and those that left service. A node's drain can end
    every command between two polls, so a finished attempt that did not succeed everywhere is
    still checked for lost nodes before it counts as the job's end."""
    while True:
        results = []
        for rank, node in enumerate(started.nodes):
            invocation = _invocation(clients, started.command_of(node.instance_id), node.instance_id)
            code = invocation.get("ResponseCode")
            results.append(NodeResult(rank, node, invocation["Status"],
                                      code if invocation["Status"] in TERMINAL and code is not None and code >= 0 else None))
        finished = all(result.status in TERMINAL for result in results)
        if finished and all(result.exit_code == 0 for result in results):
            return results, []
        in_service = set(in_service_instance_ids(clients.autoscaling, job.group_name))
        lost = [result.node for result in results
                if result.exit_code == EXIT_DRAINED or result.node.instance_id not in in_service]
        if lost or finished:
            return results, lost
        clock.sleep(poll)


def stop_attempt(clients: Clients, settings: StackSettings, job: Job, started: Attempt) -> list[Node]:
    """Cancel the attempt's commands and stop the job's processes on the nodes still in service
    (CancelCommand ends the SSM step; `launch-stop` also ends a container the step started)."""
    for command_id in started.commands:
        clients.ssm.cancel_command(CommandId=command_id)
    in_service = set(in_service_instance_ids(clients.autoscaling, job.group_name))
    remaining = [node for node in started.nodes if node.instance_id in in_service]
    for batch in batches(remaining):
        _send_document(clients, settings, batch, {"action": ["launch-stop"], "job": [job.job_id]},
                       f"gpucloud job {job.job_id} stop")
    return remaining


@dataclass(frozen=True)
class Outcome:
    job: Job
    results: list[NodeResult]
    stopped: str | None = None
    """Why the job stopped before its command ended on every node, in one line; None otherwise."""

    @property
    def exit_code(self) -> int:
        if self.stopped:
            return 1
        codes = [result.exit_code for result in self.results]
        if all(code == 0 for code in codes):
            return 0
        return next((code for code in codes if code not in (None, 0)), 1)


def run(clients: Clients, settings: StackSettings, job: Job, say: Callable[[str], None] = print,
        clock: Clock | None = None, max_restarts: int = 3, node_timeout: float = 1800.0, poll: float = 15.0) -> Outcome:
    """Run the job to its end on every node, resuming it on replaced nodes (see the module doc)."""
    clock = clock or Clock()
    started = start(clients, settings, job, say, clock, node_timeout, poll)
    attempt = 0
    while True:
        results, lost = watch(clients, job, started, clock, poll)
        if not lost:
            return Outcome(job, results)
        gone = ", ".join(f"{node.instance_id} ({node.private_ip})" for node in lost)
        say(f"job {job.job_id}: node {gone} left service during attempt {attempt} (or its drain stopped the job)")
        stop_attempt(clients, settings, job, started)
        if not job.checkpoint_uri:
            return Outcome(job, results, stopped=(
                f"job {job.job_id} stopped: node {gone} was replaced and the stack has no data.writePrefixes, so there is "
                "no checkpoint to resume from; rerun it to start over"))
        if attempt >= max_restarts:
            return Outcome(job, results, stopped=(
                f"job {job.job_id} stopped: node {gone} was replaced after {max_restarts} resumes (--max-restarts); "
                f"its checkpoints stay at {job.checkpoint_uri}"))
        nodes = wait_for_nodes(clients, job, node_timeout, clock, poll)
        if nodes is None:
            return Outcome(job, results, stopped=(
                f"job {job.job_id} stopped: group {job.group} did not get back to {job.nodes} nodes in service within "
                f"{node_timeout:.0f} s after node {gone} was replaced; its checkpoints stay at {job.checkpoint_uri}"))
        attempt += 1
        started = send(clients, settings, job, attempt, nodes)
        _say_started(say, job, started)


def start(clients: Clients, settings: StackSettings, job: Job, say: Callable[[str], None], clock: Clock,
          node_timeout: float, poll: float) -> Attempt:
    """Raise the group, wait for N nodes and send attempt 0; if the job does not get that far,
    lower the group back to where `raise_capacity` found it."""
    found = raise_capacity(clients, job, say)
    try:
        nodes = wait_for_nodes(clients, job, node_timeout, clock, poll)
        if nodes is None:
            raise JobError(f"group {job.group} did not reach {job.nodes} nodes in service within {node_timeout:.0f} s: "
                           f"check its activity (aws autoscaling describe-scaling-activities --auto-scaling-group-name {job.group_name})")
        started = send(clients, settings, job, 0, nodes)
    except BaseException:
        if found is not None:
            lower_capacity(clients, job, found, say)
        raise
    _say_started(say, job, started)
    return started


def _say_started(say: Callable[[str], None], job: Job, started: Attempt) -> None:
    nodes = started.nodes
    say(f"job {job.job_id} attempt {started.attempt}: command {', '.join(started.commands)} on " + ", ".join(
        f"node {rank} {node.private_ip} ({node.instance_id})" for rank, node in enumerate(nodes))
        + f"; MASTER_ADDR={nodes[0].private_ip} MASTER_PORT={job.port}")
