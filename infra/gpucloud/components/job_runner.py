"""JobRunner: what `gpucloud run` uses on a stack: the job document, the encrypted job log group,
and, when the stack asks (`access.jobRunnerPolicy`), the team's managed policy to run jobs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents.jobs import job_document_content, job_runner_policy, jobs_prefix
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import (
    autoscaling_group_name,
    job_document_name,
    job_log_group_name,
    job_runner_policy_name,
    job_supervisor_name,
)

JOB_LOG_RETENTION_DAYS = 90
"""How long job output stays in CloudWatch Logs (one of the values the provider and the API take)."""


@dataclass(frozen=True)
class JobRunnerArgs:
    name_base: str
    partition: str
    region: str
    account_id: str
    kms_key_arn: pulumi.Input[str]
    group_names: Sequence[str]
    """The stack's Auto Scaling group names: the only groups the team policy may resize."""
    bucket: str | None = None
    jobs_prefix: str | None = None
    """`<first write prefix>jobs/`: job records and checkpoints; None without a write prefix."""
    team_policy: bool = False
    """Create the managed policy for the team (`access.jobRunnerPolicy`)."""
    supervisor_name: str | None = None
    """The stack's job supervisor state machine, whose executions the team policy lets its holders start, follow and stop."""
    tags: Mapping[str, str] = field(default_factory=dict)


class JobRunner(pulumi.ComponentResource):
    """The Command document `gpucloud run` sends to every node of a job, the log group Run Command
    writes the job's output to (encrypted with the project key), and the optional team policy.

    The policy is created, not attached: who runs jobs is the account's business (an IAM Identity
    Center permission set or a group takes it by ARN)."""

    document_name: pulumi.Output[str]
    """The job document's name (`gpu-cloud-<base>-run`)."""
    log_group_name: pulumi.Output[str]
    """Where every job's output goes."""
    team_policy_arn: pulumi.Output[str] | None
    """The team's managed policy, when the stack creates it."""

    def __init__(self, name: str, args: JobRunnerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:JobRunner", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        self.document = aws.ssm.Document(
            f"{name}-document",
            name=job_document_name(args.name_base),
            document_type="Command",
            document_format="JSON",
            content=job_document_content(),
            tags=tags,
            opts=child,
        )
        self.log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=job_log_group_name(args.name_base),
            kms_key_id=args.kms_key_arn,
            retention_in_days=JOB_LOG_RETENTION_DAYS,
            tags=tags,
            opts=child,
        )
        self.team_policy = None
        if args.team_policy:
            self.team_policy = aws.iam.Policy(
                f"{name}-team-policy",
                name=job_runner_policy_name(args.name_base),
                description=f"gpu-cloud {args.name_base}: run, follow and stop jobs with gpucloud run/logs/stop",
                policy=pulumi.Output.from_input(args.kms_key_arn).apply(
                    lambda key_arn: json.dumps(
                        job_runner_policy(
                            partition=args.partition,
                            region=args.region,
                            account_id=args.account_id,
                            name_base=args.name_base,
                            document_name=job_document_name(args.name_base),
                            log_group_name=job_log_group_name(args.name_base),
                            group_names=args.group_names,
                            key_arn=key_arn,
                            bucket=args.bucket,
                            jobs_prefix=args.jobs_prefix,
                            supervisor_name=args.supervisor_name,
                        )
                    )
                ),
                tags=tags,
                opts=child,
            )
        self.document_name = self.document.name
        self.log_group_name = self.log_group.name
        self.team_policy_arn = self.team_policy.arn if self.team_policy else None
        self.register_outputs(
            {"documentName": self.document_name, "logGroupName": self.log_group_name, "teamPolicyArn": self.team_policy_arn}
        )


def job_runner(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str], opts: pulumi.ResourceOptions) -> JobRunner:
    """The stack's JobRunner, from the resolved stack."""
    config = stack.settings.config
    data = config.data
    base = stack.settings.name_base
    return JobRunner(
        f"{name}-jobs",
        JobRunnerArgs(
            name_base=base,
            partition=stack.partition,
            region=stack.settings.region,
            account_id=stack.account_id,
            kms_key_arn=kms_key_arn,
            group_names=[autoscaling_group_name(base, group.config.name) for group in stack.groups],
            bucket=data.bucket if data else None,
            jobs_prefix=jobs_prefix(data.write_prefixes) if data else None,
            team_policy=config.access.job_runner_policy,
            supervisor_name=job_supervisor_name(base),
            tags=stack.settings.tags,
        ),
        opts=opts,
    )
