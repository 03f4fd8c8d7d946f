"""Load balancer exposure: internal unless the stack declares it internet-facing, and an
internet-facing one only behind TLS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpucloud.policy.model import UNKNOWN, PlannedResource, PolicyConfig, Report, StackReport
from gpucloud.policy.values import is_true, peek, text, unknown_at

LOAD_BALANCER = "aws:lb/loadBalancer:LoadBalancer"
LISTENER = "aws:lb/listener:Listener"
INTERNET_FACING_TAG = "gpu-cloud:internet-facing"
"""The explicit word: a load balancer that is meant to face the internet carries this tag with the
value `declared`. pulumi-aws makes a load balancer internet-facing whenever `internal` is not true,
so leaving it out is the easy mistake this rule catches."""
TLS_PROTOCOLS = ("HTTPS", "TLS")


def _internal(props: Mapping[str, Any]) -> Any:
    value = peek(props, "internal")
    return value if value is UNKNOWN else is_true(value)


def _declared(props: Mapping[str, Any]) -> bool:
    tags = peek(props, "tags")
    if tags is UNKNOWN:
        raise unknown_at(props, "tags")
    return isinstance(tags, Mapping) and text(tags.get(INTERNET_FACING_TAG)) == "declared"


def validate_load_balancer_internal(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != LOAD_BALANCER:
        return
    internal = _internal(props)
    if internal is UNKNOWN:
        raise unknown_at(props, "internal")
    if not internal and not _declared(props):
        report(f"Load balancer is internet-facing (internal is not true) and the stack does not declare it. Fix: set "
               f"internal: true, or, for an endpoint meant for the internet, tag it {INTERNET_FACING_TAG}: declared "
               "and give it an HTTPS listener.")


def validate_internet_facing_load_balancer_uses_tls(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    facing = [resource for resource in resources
              if resource.type == LOAD_BALANCER and _internal(resource.props) is False]
    for listener in (resource for resource in resources if resource.type == LISTENER):
        arn = listener.props.get("loadBalancerArn")
        linked = listener.property_dependencies.get("loadBalancerArn", ())
        balancer = next((resource for resource in facing
                         if (isinstance(arn, str) and arn and arn in (resource.props.get("arn"), resource.urn))
                         or resource.urn in linked), None)
        if balancer is None:
            continue
        protocol = str(listener.props.get("protocol") or "HTTP").upper()
        if protocol not in TLS_PROTOCOLS:
            report(f"Listener of the internet-facing load balancer {balancer.name!r} takes {protocol}, so requests "
                   "and their answers cross the internet in clear text. Fix: protocol HTTPS with an ACM "
                   "certificate (certificateArn), or make the load balancer internal.", listener.urn)
