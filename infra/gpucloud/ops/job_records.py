"""What `gpucloud run` knows of a job before and after any AWS call: the job as the stack file
allows it (`new_job`, refused with a one-line JobError), its attempts and their commands, and its
record at `<checkpoint URI>job.json`, which `logs` and `stop` read back; the clients and clock the
job commands share."""

from __future__ import annotations

import base64
import datetime
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.config.rules.jobs import job_image_problem
from gpucloud.documents.jobs import JOB_PARAMETERS, jobs_prefix, parameter_problem
from gpucloud.naming import autoscaling_group_name
from gpucloud.ops.nodes import Node

DEFAULT_PORT = 29500


class JobError(Exception):
    """The job cannot start or cannot go on; the message says why and what to do."""


@dataclass
class Clients:
    """The AWS clients the job commands use (boto3 clients in the stack's region)."""

    autoscaling: Any
    ec2: Any
    ssm: Any
    logs: Any
    s3: Any
    states: Any = None
    """Step Functions: the job supervisor's executions (ops/supervised_jobs.py)."""

    @classmethod
    def of(cls, session) -> Clients:
        return cls(*(session.client(name) for name in ("autoscaling", "ec2", "ssm", "logs", "s3", "stepfunctions")))


@dataclass
class Clock:
    """Time as the waits see it; tests pass one whose sleep only moves `now` on."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass
class Attempt:
    attempt: int
    commands: dict[str, list[str]]
    """Command id -> the instance ids it went to: one command per batch of at most 50 nodes."""
    nodes: list[Node]

    def command_of(self, instance_id: str) -> str:
        return next(command for command, instances in self.commands.items() if instance_id in instances)

    @classmethod
    def from_record(cls, item: dict[str, Any]) -> Attempt:
        """An attempt as `Job.to_json` wrote it; a record from before batches names one `command_id`."""
        nodes = [Node(**node) for node in item["nodes"]]
        commands = item.get("commands") or {item["command_id"]: [node.instance_id for node in nodes]}
        return cls(item["attempt"], commands, nodes)


@dataclass
class Job:
    """What `run` records at `<checkpoint URI>job.json`, and `logs` and `stop` read back."""

    job_id: str
    stack: str
    group: str
    group_name: str
    nodes: int
    command: list[str]
    port: int = DEFAULT_PORT
    gpus_per_node: int | None = None
    image: str | None = None
    checkpoint_uri: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    execution: str | None = None
    """The job supervisor's execution ARN (ops/supervised_jobs.py); None for a job `run` supervised itself."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        data["attempts"] = [Attempt.from_record(item) for item in data.get("attempts", [])]
        return cls(**data)

    def parameters(self, attempt: int, nodes: Sequence[Node]) -> dict[str, list[str]]:
        """The job document's parameters for one attempt on `nodes` (in rendezvous order)."""
        values = {
            "action": "launch",
            "job": self.job_id,
            "nodes": ",".join(node.private_ip for node in nodes),
            "port": str(self.port),
            "gpusPerNode": str(self.gpus_per_node or ""),
            "image": self.image or "",
            "attempt": str(attempt),
            "checkpointUri": self.checkpoint_uri or "",
            "commandB64": base64.b64encode(json.dumps(self.command).encode("utf-8")).decode("ascii"),
        }
        problems = [problem for name, value in values.items() if (problem := parameter_problem(name, value))]
        if problems:
            raise JobError("; ".join(problems))
        assert set(values) == set(JOB_PARAMETERS)
        return {name: [value] for name, value in values.items()}


def new_job_id(group: str, now: datetime.datetime | None = None) -> str:
    """`<group>-<utc yyyymmddhhmmss>-<4 hex>`: sortable by start, unique across runs."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return f"{group}-{now:%Y%m%d%H%M%S}-{secrets.token_hex(2)}"


def checkpoint_uri(settings: StackSettings, job_id: str) -> str | None:
    """`s3://<bucket>/<first write prefix>jobs/<job id>/`, or None when the stack writes nowhere."""
    data = settings.config.data
    prefix = jobs_prefix(data.write_prefixes) if data else None
    return f"s3://{data.bucket}/{prefix}{job_id}/" if prefix else None


def record_location(checkpoint_uri: str) -> tuple[str, str]:
    """Bucket and key of a job's record: `job.json` beside its checkpoints, under its checkpoint URI."""
    bucket, _, key = checkpoint_uri[len("s3://"):].partition("/")
    return bucket, f"{key}job.json"


def record(clients: Clients, job: Job) -> None:
    """Write the job's record beside its checkpoints (nothing to write without a checkpoint URI)."""
    if job.checkpoint_uri:
        bucket, key = record_location(job.checkpoint_uri)
        clients.s3.put_object(Bucket=bucket, Key=key, Body=job.to_json().encode("utf-8"),
                              ContentType="application/json")


def new_job(settings: StackSettings, group: str, command: Sequence[str], nodes: int | None = None,
            gpus_per_node: int | None = None, image: str | None = None, port: int = DEFAULT_PORT,
            job_id: str | None = None) -> Job:
    """The job as the stack file allows it, before any AWS call."""
    groups = {candidate.name: candidate for candidate in settings.config.groups}
    if group not in groups:
        raise JobError(f"stack {settings.stack!r} has no group {group!r} (groups: {', '.join(groups)})")
    if not settings.config.access.ssm:
        raise JobError(f"stack {settings.stack!r} has access.ssm: false: its nodes run no SSM Agent channel for Run Command")
    if not command:
        raise JobError("no command: put it after --, e.g. gpucloud run ... -- torchrun ... train.py")
    config = groups[group]
    count = nodes or 1
    if count < 1:
        raise JobError(f"--nodes {count}: a job needs at least one node")
    if count > config.max_size:
        raise JobError(f"--nodes {count} is above group {group}'s maxSize {config.max_size} ({settings.source}): "
                       "raise maxSize or ask for fewer nodes")
    if count > 1 and not config.multi_node:
        raise JobError(f"group {group} is not multiNode: its security group lets its nodes reach each other on no "
                       "port, so a rendezvous of several nodes cannot form; set multiNode: true or use --nodes 1")
    problem = job_image_problem(settings.config, config, image, settings.source) if image else None
    if problem:
        raise JobError(problem)
    job_id = job_id or new_job_id(group)
    return Job(job_id=job_id, stack=settings.stack, group=group,
               group_name=autoscaling_group_name(settings.name_base, group), nodes=count, command=list(command),
               port=port, gpus_per_node=gpus_per_node, image=image, checkpoint_uri=checkpoint_uri(settings, job_id))
