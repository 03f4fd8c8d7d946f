"""Rules on the GPU fleet itself: IMDSv2 on every instance, and Auto Scaling groups that are bounded
and rebalance their Spot capacity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import PolicyConfig, Report
from gpucloud.policy.resource_types import AUTOSCALING_GROUP, INSTANCE, LAUNCH_TEMPLATE
from gpucloud.policy.values import as_number, entry, is_true, peek

# ---------------------------------------------------------------- imdsv2-required

MAX_HOP_LIMIT = 2
CONTAINERS_TAG = "gpu-cloud:containers"
"""The tag a launch template carries where its nodes run container services on Docker's bridge
network, one hop further from IMDS: only there may the hop limit be 2 (EC2 user guide, "Configure
the instance metadata options": 2 for containers, 1 otherwise; read 2026-11-25)."""


def validate_imdsv2_required(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type not in (LAUNCH_TEMPLATE, INSTANCE):
        return
    options = props.get("metadataOptions")
    if resource_type == INSTANCE and options is None and peek(props, "launchTemplate") is not None:
        return  # the launch template's metadata options apply and are checked there
    kind = "Launch template" if resource_type == LAUNCH_TEMPLATE else "Instance"
    if entry(options, "httpEndpoint") == "disabled":
        return  # no metadata service at all
    if entry(options, "httpTokens") != "required":
        report(
            f"{kind} allows IMDSv1 (metadataOptions.httpTokens is {entry(options, 'httpTokens')!r}). "
            'Fix: set metadataOptions.httpTokens to "required".'
        )
    hop_limit = entry(options, "httpPutResponseHopLimit")
    if hop_limit is not None:  # absent: AWS default of 1
        hops = as_number(hop_limit)
        if hops is None or hops > MAX_HOP_LIMIT:
            report(
                f"{kind} metadataOptions.httpPutResponseHopLimit is {hop_limit!r}, which lets tokens travel "
                f"beyond the instance and its containers. Fix: set it to 1, or {MAX_HOP_LIMIT} for containers."
            )
        elif hops > 1 and entry(props.get("tags"), CONTAINERS_TAG) != "true":
            report(
                f"{kind} metadataOptions.httpPutResponseHopLimit is {hop_limit!r}, but it runs no containers (no "
                f'{CONTAINERS_TAG}: "true" tag), so a token could leave the instance for nothing. Fix: set it to 1, '
                f"or tag it {CONTAINERS_TAG}=true where its nodes run container services."
            )


# ---------------------------------------------------------------- asg-bounded-and-rebalanced


def validate_asg_bounded_and_rebalanced(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != AUTOSCALING_GROUP:
        return
    config = config or PolicyConfig()
    max_size = as_number(props.get("maxSize"))
    if max_size is None:
        report(f"Auto Scaling group maxSize is {props.get('maxSize')!r}, not a finite number. Fix: set maxSize.")
    elif max_size > config.max_group_size:
        report(
            f"Auto Scaling group maxSize {max_size:g} exceeds this stack's cap of {config.max_group_size}. "
            "Fix: lower maxSize, or raise maxGroupSize for this stack in the policy pack config."
        )
    distribution = entry(props.get("mixedInstancesPolicy"), "instancesDistribution")
    if isinstance(distribution, Mapping):
        on_demand = distribution.get("onDemandPercentageAboveBaseCapacity")
        percentage = 100.0 if on_demand is None else as_number(on_demand)  # AWS default: 100
        if (percentage is None or percentage < 100) and not is_true(props.get("capacityRebalance")):
            report(
                f"Auto Scaling group runs Spot (onDemandPercentageAboveBaseCapacity={on_demand!r}) without "
                "capacity rebalancing. Fix: set capacityRebalance to true so at-risk Spot instances are "
                "replaced before they are interrupted."
            )
