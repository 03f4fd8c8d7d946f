"""The job commands' shared pieces on a live account: waiting for N in-service nodes of a group
(`gpucloud preflight`), stopping an attempt's commands on its nodes (`stop`), and what a job's
nodes' exit statuses make of `run`'s exit code (`Outcome`). The job itself runs in AWS, in the
stack's job supervisor (documents/job_supervisor.py, ops/supervised_jobs.py): it raises the group,
waits for the nodes, sends each attempt and resumes it on replaced nodes; `run` starts it and,
without --detach, follows it to that exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucloud.config import StackSettings
from gpucloud.naming import job_document_name, job_log_group_name
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


@dataclass(frozen=True)
class NodeResult:
    rank: int
    node: Node
    status: str
    exit_code: int | None


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
