"""What the nodes may reach and who reaches them: S3 data prefixes, ingress and Session Manager."""

from __future__ import annotations

import json

from pydantic import Field, field_validator, model_validator

from gpucloud.config.fields import BucketName, Cidr, ConfigModel, Prefix
from gpucloud.documents import instance_role_policy
from gpucloud.naming import NAME_BASE_MAX_LENGTH


class DataConfig(ConfigModel):
    """The project's S3 data: one bucket, prefixes read-only or read/write."""

    bucket: BucketName
    read_prefixes: list[Prefix] = Field(default_factory=list)
    write_prefixes: list[Prefix] = Field(default_factory=list)

    @model_validator(mode="after")
    def some_prefix_is_granted(self) -> DataConfig:
        if not self.read_prefixes and not self.write_prefixes:
            raise ValueError("names a bucket but grants no readPrefixes or writePrefixes")
        return self

    @model_validator(mode="after")
    def prefixes_fit_in_the_node_role_policy(self) -> DataConfig:
        size = _longest_node_role_policy_size(self)
        if size > IAM_ROLE_POLICY_LIMIT:
            raise ValueError(
                f"readPrefixes and writePrefixes make the node role's IAM policy {size} characters, "
                f"above the {IAM_ROLE_POLICY_LIMIT} IAM allows a role: grant fewer or shorter prefixes "
                "(a prefix covers every key under it)"
            )
        return self


IAM_ROLE_POLICY_LIMIT = 10240
"""AWS: the inline policies of one role together, whitespace not counted."""


def _longest_node_role_policy_size(data: DataConfig) -> int:
    """The node role's policy for these prefixes with the longest partition, region, account,
    key and name base (project and stack) any stack can have, so the check holds for every stack."""
    region = "ap-southeast-7"
    document = instance_role_policy(
        partition="aws-us-gov",
        region=region,
        account_id="0" * 12,
        project="p" * NAME_BASE_MAX_LENGTH,
        key_arn=f"arn:aws-us-gov:kms:{region}:{'0' * 12}:key/{'0' * 36}",
        bucket=data.bucket,
        read_prefixes=data.read_prefixes,
        write_prefixes=data.write_prefixes,
        session_manager=True,
    )
    return len(json.dumps(document, separators=(",", ":")))


class AccessConfig(ConfigModel):
    """Who may reach the instances. Empty lists are the default: no ingress at all."""

    ssh_cidrs: list[Cidr] = Field(default_factory=list)
    jupyter_cidrs: list[Cidr] = Field(default_factory=list)
    tensorboard_cidrs: list[Cidr] = Field(default_factory=list)
    ssm: bool = True

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
