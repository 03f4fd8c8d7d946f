"""What the nodes may reach and who reaches them: S3 data prefixes, ingress and Session Manager
(the node role's policies for all that, and IAM's quota on them: `gpucloud.config.node_role`)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from gpucloud.config.fields import BucketName, ConfigModel, Prefix, PrivateCidr


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


class AccessConfig(ConfigModel):
    """Who may reach the instances. Empty lists are the default: no ingress at all."""

    ssh_cidrs: list[PrivateCidr] = Field(default_factory=list, json_schema_extra={"uniqueItems": True})
    """Ranges admitted to port 22 of the nodes, each once, private only (RFC 1918, fc00::/7: the nodes have no
    public address); must stay empty while ssm is true."""
    jupyter_cidrs: list[PrivateCidr] = Field(default_factory=list, json_schema_extra={"uniqueItems": True})
    """Ranges admitted to JupyterLab's port 8888 on the nodes, each once, private only (RFC 1918, fc00::/7: the
    nodes have no public address, so only a network routed into the VPC reaches them; else use `gpucloud connect`)."""
    tensorboard_cidrs: list[PrivateCidr] = Field(default_factory=list, json_schema_extra={"uniqueItems": True})
    """Ranges admitted to TensorBoard's port 6006 on the nodes, each once, private only (RFC 1918, fc00::/7)."""
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
