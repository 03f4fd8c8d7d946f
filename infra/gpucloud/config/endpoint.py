"""A group's inference endpoint: an Application Load Balancer in front of its model servers.

Each range below is what terraform-provider-aws checks before any AWS call (its source file and the
date it was read are in `data/provider_rules.json`), or what Elastic Load Balancing refuses, cited
where it is checked; all read 2026-11-25.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gpucloud.config.fields import Cidr, ConfigModel, shaped

AcmCertificateArn = Annotated[str, shaped(
    r"arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[0-9a-f-]{36}",
    "use an ACM certificate ARN such as arn:aws:acm:us-east-1:123456789012:certificate/"
    "0123abcd-0123-abcd-0123-0123456789ab", 200,
)]
SecurityGroupId = Annotated[str, shaped(r"sg-[0-9a-f]{8,17}", "use a security group id such as sg-0123456789abcdef0", 20)]
HealthCheckPath = Annotated[str, shaped(
    r"/[A-Za-z0-9._~/\-?=&%]*", "use a path that starts with / (letters, digits and . _ ~ / - ? = & %)", 1024,
)]
"""terraform-provider-aws: `health_check.path` is 1-1024 characters starting with `/`
(internal/service/elbv2/target_group.go)."""

DEFAULT_REQUESTS_PER_TARGET = 60.0
"""Requests per node per minute the group's target tracking keeps: an LLM request holds a server for
seconds, so a node that takes one a second is busy; tune it from the load test of the model."""


class EndpointAccessLogs(ConfigModel):
    """Where the load balancer writes its access logs. By default a bucket the stack creates for the
    group (SSE-S3, the only encryption ALB log delivery takes, Elastic Load Balancing user guide,
    "Enable access logs for your Application Load Balancer", read 2026-11-25), kept `retentionDays`."""

    enabled: bool = True
    """Write the load balancer's access logs to a bucket the stack creates for the group."""
    prefix: Annotated[str, shaped(r"[a-z0-9][a-z0-9\-/]*[a-z0-9]", "use lowercase letters, digits, - and /", 100)] = "endpoint"
    """The key prefix of the logs in that bucket; Elastic Load Balancing adds `AWSLogs/<account>/` after it, so
    it may not hold AWSLogs itself."""
    retention_days: int = Field(default=90, ge=1, le=3650)
    """Days each access log object is kept before it expires."""

    @field_validator("prefix")
    @classmethod
    def prefix_leaves_awslogs_to_aws(cls, prefix: str) -> str:
        # "The prefix that you specify must not include AWSLogs" (same guide).
        if "awslogs" in prefix.lower():
            raise ValueError("must not hold AWSLogs: Elastic Load Balancing adds AWSLogs/<account>/ after it")
        return prefix


class EndpointConfig(ConfigModel):
    """An Application Load Balancer in the stack's private subnets (public ones when
    `internetFacing`) forwarding to `port` on the
    group's nodes, attached to the group's Auto Scaling group, scaling it on requests per node."""

    port: int = Field(ge=1, le=65535)
    """The port the model server listens on in the node (a service of the group must serve it)."""
    health_check_path: HealthCheckPath = "/health"
    """The path the load balancer's health check GETs on the node's port; only a 200 answer is healthy."""
    protocol: Literal["HTTP", "HTTPS"] = "HTTP"
    """The listener's protocol; HTTPS needs `certificateArn` (the load balancer ends TLS)."""
    certificate_arn: AcmCertificateArn | None = None
    """The ACM certificate, in the stack's region, an HTTPS listener ends TLS with; only with protocol HTTPS."""
    listener_port: int | None = Field(default=None, ge=1, le=65535)
    """By default 80 for HTTP and 443 for HTTPS."""
    internet_facing: bool = False
    """The explicit word the policies look for: true puts the load balancer in the network's public
    subnets with a public DNS name, behind HTTPS only. Callers are still listed in `allowedCidrs`
    (0.0.0.0/0 stays refused, as everywhere in gpu-cloud). Changing it replaces the load balancer
    and its DNS name (`internal` is ForceNew in terraform-provider-aws
    internal/service/elbv2/load_balancer.go, read 2026-11-25)."""
    allowed_cidrs: list[Cidr] = Field(default_factory=list, max_length=50)
    """Caller ranges admitted on the listener port (0.0.0.0/0 and ::/0 are refused)."""
    allowed_security_group_ids: list[SecurityGroupId] = Field(default_factory=list, max_length=50,
                                                               json_schema_extra={"uniqueItems": True})
    """Who may call the endpoint: these ranges and the members of these security groups, nobody else."""
    slow_start_seconds: int = Field(default=120, json_schema_extra={"minimum": 0, "maximum": 900,
                                                                    "not": {"exclusiveMinimum": 0, "exclusiveMaximum": 30}})
    """How long a new node's share of requests ramps up after it first passes the health check
    (0 turns it off): the model is in GPU memory but its caches are cold."""
    deregistration_delay_seconds: int = Field(default=300, ge=0, le=3600)
    """How long a leaving node keeps its in-flight requests (a long generation) before it is cut."""
    health_check_interval_seconds: int = Field(default=15, ge=5, le=300)
    """Seconds between the load balancer's health checks of each node."""
    health_check_timeout_seconds: int = Field(default=5, ge=2, le=120)
    """Seconds a health check may take; shorter than healthCheckIntervalSeconds."""
    healthy_threshold: int = Field(default=2, ge=2, le=10)
    """Passed checks in a row before a node gets requests."""
    unhealthy_threshold: int = Field(default=3, ge=2, le=10)
    """Failed checks in a row before the load balancer stops sending a node requests (the node agent, not the load
    balancer, decides replacements)."""
    idle_timeout_seconds: int = Field(default=300, ge=1, le=4000)
    """How long a connection may stay silent: a streamed generation can pause between tokens (ALB
    takes 1-4000 s, Elastic Load Balancing API reference, `idle_timeout.timeout_seconds`)."""
    requests_per_target: float | None = Field(default=DEFAULT_REQUESTS_PER_TARGET, gt=0)
    """Target tracking on ALBRequestCountPerTarget (requests per node per minute); null: no policy."""
    access_logs: EndpointAccessLogs = Field(default_factory=EndpointAccessLogs)

    @field_validator("slow_start_seconds")
    @classmethod
    def slow_start_is_zero_or_in_range(cls, seconds: int) -> int:
        # terraform-provider-aws: validation.Any(IntBetween(0, 0), IntBetween(30, 900)) on slow_start.
        if seconds != 0 and not 30 <= seconds <= 900:
            raise ValueError(f"{seconds} is neither 0 (off) nor 30-900 seconds, what a target group's slow start takes")
        return seconds

    @field_validator("allowed_security_group_ids")
    @classmethod
    def groups_are_unique(cls, groups: list[str]) -> list[str]:
        if len(set(groups)) != len(groups):
            raise ValueError("lists a security group twice")
        return groups

    @property
    def effective_listener_port(self) -> int:
        return self.listener_port or (443 if self.protocol == "HTTPS" else 80)

    @model_validator(mode="after")
    def https_has_a_certificate(self) -> EndpointConfig:
        """CreateListener: an HTTPS listener takes exactly one default certificate (botocore
        elbv2 model 2015-12-01, CreateListenerInput `Certificates`)."""
        if self.protocol == "HTTPS" and not self.certificate_arn:
            raise ValueError("protocol HTTPS needs certificateArn (an ACM certificate in the stack's region)")
        if self.protocol == "HTTP" and self.certificate_arn:
            raise ValueError("certificateArn is only for protocol HTTPS: set protocol: HTTPS, or drop it")
        return self

    @model_validator(mode="after")
    def health_check_fits_its_interval(self) -> EndpointConfig:
        """CreateTargetGroup refuses a health check timeout that is not shorter than its interval
        (Elastic Load Balancing user guide, "Health checks for Application Load Balancer target
        groups": HealthCheckTimeoutSeconds "must be smaller than the interval")."""
        if self.health_check_timeout_seconds >= self.health_check_interval_seconds:
            raise ValueError(f"healthCheckTimeoutSeconds {self.health_check_timeout_seconds} must be shorter than "
                             f"healthCheckIntervalSeconds {self.health_check_interval_seconds}")
        return self

    @model_validator(mode="after")
    def someone_may_call_it(self) -> EndpointConfig:
        if not self.allowed_cidrs and not self.allowed_security_group_ids:
            raise ValueError("admits nobody: list allowedCidrs (the callers' ranges) or allowedSecurityGroupIds")
        return self

    @model_validator(mode="after")
    def internet_facing_only_behind_tls(self) -> EndpointConfig:
        """Requests and answers of an internet-facing endpoint cross the internet: HTTPS only (the
        `load-balancer-tls-when-internet-facing` policy refuses the same on any load balancer)."""
        if self.internet_facing and self.protocol != "HTTPS":
            raise ValueError("internetFacing needs protocol: HTTPS with certificateArn (an ACM certificate): "
                             "plain HTTP would carry prompts and answers across the internet in clear text")
        return self
