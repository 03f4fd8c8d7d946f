"""Where the nodes run: a network the stack creates (the default), or subnets of your own VPC."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gpucloud.config.fields import IPV4_OCTET, ConfigModel, JsonShape, SubnetId, json_pattern

InterfaceEndpoint = Literal[
    "ssm", "ssmmessages", "ec2messages", "autoscaling", "logs", "monitoring", "sts", "kms", "ec2", "aps-workspaces",
    "ecr.api", "ecr.dkr", "secretsmanager",
]
"""The interface endpoints a stack may create. Which of them its nodes need is measured, not listed
here: `gpucloud.config.node_endpoints` (aps-workspaces is the data plane of Amazon Managed Service
for Prometheus, where the collector remote-writes: AMP user guide, "Using Amazon Managed Service
for Prometheus with interface VPC endpoints", read 2026-11-25; ecr.api and ecr.dkr are the two ECR
endpoints a private image pull needs, with the S3 gateway for its layers: ECR user guide, "Amazon
ECR interface VPC endpoints (AWS PrivateLink)", read 2026-11-25; secretsmanager serves
`secretEnv`'s Secrets Manager references: Secrets Manager user guide, "Using an AWS Secrets Manager
VPC endpoint", read 2026-11-28)."""

FLOW_LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)
"""The values CloudWatch Logs PutRetentionPolicy takes for `retentionInDays` (API reference, read 2026-11-24)."""

DEFAULT_CIDR = "10.64.0.0/16"
VPC_CIDR_PATTERN = (rf"(?:10\.{IPV4_OCTET}|172\.(?:1[6-9]|2[0-9]|3[01])|192\.168)\.{IPV4_OCTET}\.{IPV4_OCTET}"
                    r"/0*(?:1[6-9]|2[0-2])")
"""`cidr_fits_the_subnet_plan` as far as a pattern can say: /16 to /22 in RFC 1918's ranges (host bits
set still pass it)."""
WITHOUT_INTERNET = (
    "package installs (apt, pip, conda), container pulls from public registries and model or dataset "
    "downloads from the internet (Hugging Face Hub, GitHub) cannot work; keep what the nodes need in S3 "
    "or in the AMI"
)


class NetworkConfig(ConfigModel):
    """No `subnetIds`: the stack creates its own VPC (private node subnets, NAT, S3 gateway endpoint,
    flow logs). With `subnetIds`: those subnets of your VPC, checked for a way out."""

    subnet_ids: list[SubnetId] | None = Field(default=None, min_length=1, json_schema_extra={"uniqueItems": True})
    """Subnets of one VPC of your own to run in, each listed once, instead of a network the stack creates; then
    none of the keys below may be set. The plan refuses a subnet whose only way out is an internet gateway (the
    nodes get no public IP)."""
    cidr: Annotated[str, JsonShape(pattern=json_pattern(VPC_CIDR_PATTERN), patternErrorMessage=(
        "expected an IPv4 block of /16 to /22 in 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16"))] = DEFAULT_CIDR
    """The created VPC's IPv4 block: /16 to /22, in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16).
    Node subnets are its eighths, NAT subnets its 64ths."""
    zones: int = Field(default=2, ge=1, le=6)
    """Availability zones the created network spans, one private node subnet each, chosen among those that offer
    the groups' instance types; an endpoint needs at least 2."""
    nat_gateways: Literal["single", "perZone"] = "single"
    """With egress nat: `single`, one NAT gateway in the first zone; `perZone`, one per zone, so each zone keeps
    its way out when another fails (each gateway is billed by the hour)."""
    egress: Literal["nat", "endpointsOnly"] = "nat"
    """How nodes reach AWS and the internet: `nat` through a NAT gateway; `endpointsOnly`, no internet gateway or
    NAT at all, so every service the nodes call needs its interface endpoint (the config is refused naming each
    missing one)."""
    interface_endpoints: list[InterfaceEndpoint] = Field(default_factory=list, json_schema_extra={"uniqueItems": True})
    """Interface VPC endpoints the created network gets, each listed once (private DNS, port 443 from the VPC
    only). An S3 gateway endpoint is always created."""
    flow_logs_retention_days: Annotated[int, JsonShape(enum=list(FLOW_LOG_RETENTION_DAYS))] = 30
    """Days CloudWatch Logs keeps the VPC's flow logs (all traffic, encrypted with the project key); one of the
    retention values CloudWatch Logs takes (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."""

    @field_validator("subnet_ids")
    @classmethod
    def subnets_are_unique(cls, subnet_ids: list[str] | None) -> list[str] | None:
        if subnet_ids and len(set(subnet_ids)) != len(subnet_ids):
            raise ValueError("lists a subnet twice")
        return subnet_ids

    @field_validator("cidr")
    @classmethod
    def cidr_fits_the_subnet_plan(cls, cidr: str) -> str:
        """Node subnets are eighths of the VPC and the NAT subnets sixty-fourths; a VPC is /16 to
        /28 and a subnet at least /28 (VPC user guide, "VPC CIDR blocks", read 2026-11-24), so the
        VPC is /16 to /22, in the private ranges of RFC 1918."""
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError as error:
            raise ValueError(f"{cidr!r} is not a CIDR block ({error})") from None
        if network.version != 4 or not 16 <= network.prefixlen <= 22:
            raise ValueError(f"{cidr} must be an IPv4 block of /16 to /22 (node subnets are its eighths, NAT subnets its 64ths)")
        if not any(network.subnet_of(ipaddress.ip_network(block)) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")):
            raise ValueError(f"{cidr} is not in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)")
        return str(network)

    @field_validator("interface_endpoints")
    @classmethod
    def endpoints_are_unique(cls, endpoints: list[str]) -> list[str]:
        if len(set(endpoints)) != len(endpoints):
            raise ValueError("lists an endpoint twice")
        return endpoints

    @field_validator("flow_logs_retention_days")
    @classmethod
    def retention_is_one_cloudwatch_takes(cls, days: int) -> int:
        return log_retention(days)

    @model_validator(mode="after")
    def created_network_keys_only_without_subnets(self) -> NetworkConfig:
        if self.subnet_ids is None:
            return self
        given = sorted(
            key for key, default in (("cidr", DEFAULT_CIDR), ("zones", 2), ("natGateways", "single"), ("egress", "nat"),
                                     ("interfaceEndpoints", []), ("flowLogsRetentionDays", 30))
            if getattr(self, _snake(key)) != default
        )
        if given:
            raise ValueError(
                f"{', '.join(given)} shape the network the stack creates, and subnetIds brings your own: "
                "drop one or the other"
            )
        return self

    @property
    def created(self) -> bool:
        return self.subnet_ids is None


def log_retention(days: int) -> int:
    """A log group retention CloudWatch Logs accepts, or a ValueError that lists them."""
    if days not in FLOW_LOG_RETENTION_DAYS:
        raise ValueError(f"{days} is not a retention CloudWatch Logs takes ({', '.join(map(str, FLOW_LOG_RETENTION_DAYS))})")
    return days


def _snake(key: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in key)
