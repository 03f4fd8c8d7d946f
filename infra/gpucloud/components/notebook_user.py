"""NotebookUser: the managed policy one group's notebook user takes (`groups[].services.jupyter.userPolicy`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.config.services import token_parameter_arn
from gpucloud.documents.notebooks import notebook_user_policy
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import autoscaling_group_name, jupyter_token_parameter_name, notebook_user_policy_name


@dataclass(frozen=True)
class NotebookUserArgs:
    policy_name: str
    name_base: str
    group: str
    autoscaling_group_name: str
    token_parameter_arn: str
    partition: str
    region: str
    account_id: str
    kms_key_arn: pulumi.Input[str]
    tags: Mapping[str, str] = field(default_factory=dict)


class NotebookUser(pulumi.ComponentResource):
    """A group's notebook user policy. Created, not attached: who uses which notebook is the
    account's business (an IAM Identity Center permission set or a role takes it by ARN)."""

    policy_arn: pulumi.Output[str]
    """The managed policy's ARN."""

    def __init__(self, name: str, args: NotebookUserArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:NotebookUser", name, None, opts)
        self.policy = aws.iam.Policy(
            f"{name}-policy",
            name=args.policy_name,
            description=f"gpu-cloud {args.name_base}: gpucloud connect to group {args.group} and read its JupyterLab token",
            policy=pulumi.Output.from_input(args.kms_key_arn).apply(
                lambda key_arn: json.dumps(notebook_user_policy(
                    partition=args.partition, region=args.region, account_id=args.account_id,
                    name_base=args.name_base, group=args.group, autoscaling_group_name=args.autoscaling_group_name,
                    token_parameter_arn=args.token_parameter_arn, key_arn=key_arn))),
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.policy_arn = self.policy.arn
        self.register_outputs({"policyArn": self.policy_arn})


def notebook_user(name: str, stack: ResolvedStack, group: str, kms_key_arn: pulumi.Input[str], tags: Mapping[str, str],
                  opts: pulumi.ResourceOptions) -> NotebookUser:
    """The group's NotebookUser, from the resolved stack."""
    base = stack.settings.name_base
    region = stack.settings.region
    return NotebookUser(name, NotebookUserArgs(
        policy_name=notebook_user_policy_name(base, group), name_base=base, group=group,
        autoscaling_group_name=autoscaling_group_name(base, group),
        token_parameter_arn=token_parameter_arn(stack.partition, region, stack.account_id,
                                                jupyter_token_parameter_name(base, group)),
        partition=stack.partition, region=region, account_id=stack.account_id, kms_key_arn=kms_key_arn, tags=tags,
    ), opts=opts)
