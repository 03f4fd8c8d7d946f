"""JobSupervisor: the Step Functions state machine that runs each `gpucloud run` job in AWS
(documents/job_supervisor.py), its role, its log group, encrypted with the project key, and with a
write prefix the EventBridge rule on the stack's groups' instance terminations that continues a
job whose supervision died."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents.job_supervisor import supervisor_definition_content
from gpucloud.documents.job_supervisor_access import (
    events_role_policy,
    events_trust_policy,
    supervisor_role_policy,
    supervisor_trust_policy,
)
from gpucloud.documents.job_supervisor_continuation import node_left_pattern
from gpucloud.documents.jobs import jobs_prefix
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import (
    autoscaling_group_name,
    job_document_name,
    job_log_group_name,
    job_supervisor_events_role_name,
    job_supervisor_log_group_name,
    job_supervisor_name,
    job_supervisor_role_name,
    job_supervisor_rule_name,
)

SUPERVISOR_LOG_RETENTION_DAYS = 90
SUPERVISOR_POLICY_NAME = "gpu-cloud-job-supervisor"
EVENTS_POLICY_NAME = "gpu-cloud-start-job-supervisor"
"""The role policies' fixed names, as the project's other role policies have: one of each per role."""
SUPERVISOR_LOG_LEVEL = "ERROR"
"""Failed states and executions only, without their data (a job's argv is in its input)."""


@dataclass(frozen=True)
class JobSupervisorArgs:
    name_base: str
    partition: str
    region: str
    account_id: str
    kms_key_arn: pulumi.Input[str]
    topic_arn: pulumi.Input[str]
    """The stack's alerts topic: every job's end is published there."""
    group_names: Sequence[str]
    """The stack's Auto Scaling group names: the only groups the supervisor may resize."""
    bucket: str | None = None
    jobs_prefix: str | None = None
    """`<first write prefix>jobs/`: attempt records; None without a write prefix."""
    tags: Mapping[str, str] = field(default_factory=dict)


class JobSupervisor(pulumi.ComponentResource):
    """A Standard workflow per stack; each job is one execution named by its job id."""

    state_machine_arn: pulumi.Output[str]
    """The supervisor `gpucloud run` starts an execution of."""
    log_group_name: pulumi.Output[str]
    """Where Step Functions logs the executions' errors."""

    def __init__(self, name: str, args: JobSupervisorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:JobSupervisor", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        machine_name = job_supervisor_name(args.name_base)
        self.log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs", name=job_supervisor_log_group_name(args.name_base), kms_key_id=args.kms_key_arn,
            retention_in_days=SUPERVISOR_LOG_RETENTION_DAYS, tags=tags, opts=child)
        self.role = aws.iam.Role(
            f"{name}-role", name=job_supervisor_role_name(args.name_base),
            assume_role_policy=json.dumps(supervisor_trust_policy(
                partition=args.partition, region=args.region, account_id=args.account_id, name=machine_name)),
            tags=tags, opts=child)
        self.policy = aws.iam.RolePolicy(
            f"{name}-policy", role=self.role.id, name=SUPERVISOR_POLICY_NAME,
            policy=pulumi.Output.all(args.kms_key_arn, args.topic_arn).apply(lambda values: json.dumps(
                supervisor_role_policy(
                    partition=args.partition, region=args.region, account_id=args.account_id, name_base=args.name_base,
                    machine_name=machine_name, document_name=job_document_name(args.name_base), group_names=args.group_names,
                    topic_arn=values[1], key_arn=values[0], bucket=args.bucket, jobs_prefix=args.jobs_prefix))),
            opts=child)
        self.state_machine = aws.sfn.StateMachine(
            f"{name}-state-machine", name=machine_name, type="STANDARD", role_arn=self.role.arn,
            definition=pulumi.Output.from_input(args.topic_arn).apply(lambda topic: supervisor_definition_content(
                document_name=job_document_name(args.name_base), log_group_name=job_log_group_name(args.name_base),
                topic_arn=topic, bucket=args.bucket, jobs_prefix=args.jobs_prefix)),
            logging_configuration=aws.sfn.StateMachineLoggingConfigurationArgs(
                log_destination=self.log_group.arn.apply(lambda arn: f"{arn}:*"), level=SUPERVISOR_LOG_LEVEL,
                include_execution_data=False),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.policy]))
        self.node_left_rule = None
        if args.bucket and args.jobs_prefix:
            self._node_left(name, args, machine_name, tags)
        self.state_machine_arn = self.state_machine.arn
        self.log_group_name = self.log_group.name
        self.register_outputs({"stateMachineArn": self.state_machine_arn, "logGroupName": self.log_group_name})


    def _node_left(self, name: str, args: JobSupervisorArgs, machine_name: str, tags: dict[str, str]) -> None:
        """The EventBridge rule that starts the supervisor on each instance leaving a stack's group
        (the node-left branch: documents/job_supervisor_continuation.py), and its role."""
        child = pulumi.ResourceOptions(parent=self)
        rule_name = job_supervisor_rule_name(args.name_base)
        rule_arn = f"arn:{args.partition}:events:{args.region}:{args.account_id}:rule/{rule_name}"
        self.node_left_rule = aws.cloudwatch.EventRule(
            f"{name}-node-left", name=rule_name, tags=tags, opts=child,
            description="gpu-cloud: an instance left a stack group; continue its job if its supervision died",
            event_pattern=json.dumps(node_left_pattern(list(args.group_names))))
        self.events_role = aws.iam.Role(
            f"{name}-events-role", name=job_supervisor_events_role_name(args.name_base),
            assume_role_policy=json.dumps(events_trust_policy(account_id=args.account_id, rule_arn=rule_arn)),
            tags=tags, opts=child)
        self.events_policy = aws.iam.RolePolicy(
            f"{name}-events-policy", role=self.events_role.id, name=EVENTS_POLICY_NAME,
            policy=self.state_machine.arn.apply(lambda arn: json.dumps(events_role_policy(arn))), opts=child)
        self.node_left_target = aws.cloudwatch.EventTarget(
            f"{name}-node-left-target", rule=self.node_left_rule.name, target_id="job-supervisor",
            arn=self.state_machine.arn, role_arn=self.events_role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.events_policy]))


def job_supervisor(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str], topic_arn: pulumi.Input[str],
                   opts: pulumi.ResourceOptions) -> JobSupervisor:
    """The stack's JobSupervisor, from the resolved stack."""
    data = stack.settings.config.data
    base = stack.settings.name_base
    return JobSupervisor(
        f"{name}-job-supervisor",
        JobSupervisorArgs(
            name_base=base, partition=stack.partition, region=stack.settings.region, account_id=stack.account_id,
            kms_key_arn=kms_key_arn, topic_arn=topic_arn,
            group_names=[autoscaling_group_name(base, group.config.name) for group in stack.groups],
            bucket=data.bucket if data else None,
            jobs_prefix=jobs_prefix(data.write_prefixes) if data else None,
            tags=stack.settings.tags),
        opts=opts)
