"""What the nodes may reach and who reaches them: S3 data prefixes, ingress and Session Manager,
and whether the node role's inline policies for all that fit IAM's quota."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.fields import BucketName, Cidr, ConfigModel, Prefix
from gpucloud.config.services import node_services_grants
from gpucloud.documents import Document, instance_role_policy, prometheus_remote_write_policy
from gpucloud.documents.node_services import node_services_policy
from gpucloud.naming import autoscaling_group_name

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


class DataConfig(ConfigModel):
    """The project's S3 data: one bucket, prefixes read-only or read/write."""

    bucket: BucketName
    """An existing S3 bucket the nodes may use (the stack does not create it); at least one of readPrefixes and
    writePrefixes must be given with it."""
    read_prefixes: list[Prefix] = Field(default_factory=list)
    """Key prefixes of the bucket the nodes may read, and list only under them (a final `/` is added; no
    wildcards)."""
    write_prefixes: list[Prefix] = Field(default_factory=list)
    """Key prefixes the nodes may read and write. The first also holds checkpoints
    (`<prefix>/checkpoints/<group>/<instance id>/`) and is TensorBoard's default logDir."""

    @model_validator(mode="after")
    def some_prefix_is_granted(self) -> DataConfig:
        if not self.read_prefixes and not self.write_prefixes:
            raise ValueError("names a bucket but grants no readPrefixes or writePrefixes")
        return self


IAM_ROLE_POLICY_LIMIT = 10240
"""IAM user guide, "IAM and AWS STS quotas" ("Role policy size cannot exceed 10,240 characters"):
the inline policies of one role together, whitespace not counted (read 2026-11-25)."""

LONGEST_PARTITION = "aws-us-gov"
"""Of the partitions a stack's region can be in (aws, aws-cn, aws-us-gov): the config does not know
which account, so the count takes the longest."""
ACCOUNT_ID = "0" * 12
"""Account ids are always 12 digits."""
KEY_ID = "0" * 36
"""KMS key ids are 36 characters: a UUID, or `mrk-` and 32 hex digits for a multi-Region key (the
KMS API reference's KeyId examples, `1234abcd-12ab-34cd-56ef-1234567890ab` and
`mrk-1234abcd12ab34cd56ef1234567890ab`; read 2026-11-25)."""
WORKSPACE_ID = "ws-" + "0" * 36
"""An AMP workspace id is `ws-` and a UUID (`PrometheusWorkspaceId` takes no other)."""


def node_role_policies(config: StackConfig, base: str, region: str) -> list[Document]:
    """The node role's inline policies as the program writes them (S3PrefixAccess, and
    PrometheusWorkspace's remote write when Prometheus is on), from the same builders, with the
    config's own name base, region, groups and prefixes, and the longest partition, account, key
    and workspace ids any account has: never shorter than what the stack will put."""
    data = config.data
    key_arn = f"arn:{LONGEST_PARTITION}:kms:{region}:{ACCOUNT_ID}:key/{KEY_ID}"
    policies = [instance_role_policy(
        partition=LONGEST_PARTITION,
        region=region,
        account_id=ACCOUNT_ID,
        project=base,
        key_arn=key_arn,
        bucket=data.bucket if data else None,
        read_prefixes=data.read_prefixes if data else (),
        write_prefixes=data.write_prefixes if data else (),
        session_manager=config.access.ssm,
        group_names=[autoscaling_group_name(base, group.name) for group in config.groups],
    )]
    prometheus = config.monitoring.prometheus
    if prometheus.enabled:
        workspace = prometheus.workspace_id or WORKSPACE_ID
        policies.append(prometheus_remote_write_policy(
            f"arn:{LONGEST_PARTITION}:aps:{region}:{ACCOUNT_ID}:workspace/{workspace}"))
    services = node_services_policy(**node_services_grants(config, LONGEST_PARTITION, region, ACCOUNT_ID, base))
    if services is not None:
        policies.append(services)
    return policies


def iam_policy_size(document: Document) -> int:
    """A policy's characters as IAM counts them: whitespace not counted."""
    return len(re.sub(r"\s", "", json.dumps(document)))


def node_role_policies_size(config: StackConfig, base: str, region: str) -> int:
    """What IAM counts against the node role's quota: all its inline policies together."""
    return sum(iam_policy_size(document) for document in node_role_policies(config, base, region))


def node_role_policy_problems(config: StackConfig, base: str, region: str) -> list[tuple[str, str]]:
    """The node role's inline policies above IAM's quota, named by the key to change: the data
    prefixes when they do not fit even beside one group, else the groups (each adds its ARN)."""
    size = node_role_policies_size(config, base, region)
    if size <= IAM_ROLE_POLICY_LIMIT:
        return []
    above = f"{size} characters, above the {IAM_ROLE_POLICY_LIMIT} IAM allows a role"
    one_group = config.model_copy(update={"groups": config.groups[:1]})
    if config.data and node_role_policies_size(one_group, base, region) > IAM_ROLE_POLICY_LIMIT:
        return [(f"{NAMESPACE}:data", (
            f"readPrefixes and writePrefixes make the node role's inline policies {above}: grant fewer "
            "or shorter prefixes (a prefix covers every key under it)"))]
    return [(f"{NAMESPACE}:groups", (
        f"{len(config.groups)} groups make the node role's inline policies {above} (the node may set "
        "the lifecycle and health of each group, named by its ARN): use fewer groups, shorter group "
        f"names or a shorter stack name{' or fewer data prefixes' if config.data else ''}"))]


class AccessConfig(ConfigModel):
    """Who may reach the instances. Empty lists are the default: no ingress at all."""

    ssh_cidrs: list[Cidr] = Field(default_factory=list)
    """Ranges admitted to port 22 of the nodes, each once (0.0.0.0/0 and ::/0 are refused); must stay empty while
    ssm is true."""
    jupyter_cidrs: list[Cidr] = Field(default_factory=list)
    """Ranges admitted to JupyterLab's port 8888 on the nodes, each once (0.0.0.0/0 and ::/0 are refused); useful
    only over a network routed into the VPC (else use `gpucloud connect`)."""
    tensorboard_cidrs: list[Cidr] = Field(default_factory=list)
    """Ranges admitted to TensorBoard's port 6006 on the nodes, each once (0.0.0.0/0 and ::/0 are refused)."""
    ssm: bool = True
    """Session Manager instead of SSH: true gives the node role what the SSM agent needs (`gpucloud connect` uses
    it) and sshCidrs must stay empty; false gives no SSM permissions."""
    job_runner_policy: bool = False
    """Create the managed policy a team needs for `gpucloud run`, `logs` and `stop` on this stack
    (documents/jobs.py, `job_runner_policy`); attaching it is left to the account."""

    @field_validator("ssh_cidrs", "jupyter_cidrs", "tensorboard_cidrs")
    @classmethod
    def cidrs_are_unique(cls, cidrs: list[str]) -> list[str]:
        """Each CIDR becomes a rule, and EC2 refuses a rule that already exists (compared as networks:
        `10.0.0.0/8` and `10.0.0.0/08` are one)."""
        repeated = sorted({cidr for cidr in cidrs if cidrs.count(cidr) > 1})
        if repeated:
            raise ValueError(f"lists {', '.join(repeated)} twice; each CIDR opens the port once")
        return cidrs

    @model_validator(mode="after")
    def ssh_only_without_session_manager(self) -> AccessConfig:
        if self.ssm and self.ssh_cidrs:
            raise ValueError(
                "sshCidrs opens port 22 while ssm is true (Session Manager instead of SSH); "
                "drop sshCidrs, or set ssm: false to use SSH instead"
            )
        return self
