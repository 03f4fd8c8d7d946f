"""capacity-feasible: a group whose every zone scores low for its spot request will wait for nodes
that do not come (pytorch/ci-infra#952: thousands of insufficient-capacity errors in two hours).

Only the offline plan can check it: the scores are account facts (`gpucloud account snapshot`),
which no pulumi-aws data source reads, so the plan hands each group's scores to the rule as a
`gpu-cloud:facts:SpotCapacity` entry and `pulumi preview` never gives it one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import PolicyConfig, Report
from gpucloud.policy.resource_types import SPOT_CAPACITY


def validate_capacity_feasible(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != SPOT_CAPACITY:
        return
    threshold = (config or PolicyConfig()).min_spot_score
    scores = {candidate["zone"]: candidate["score"] for candidate in props.get("candidates") or ()
              if candidate.get("score") is not None}
    if not scores or max(scores.values()) >= threshold:
        return
    zones = ", ".join(f"{zone} {score}" for zone, score in scores.items())
    fixes = "; or ".join(fix["fix"] for fix in props.get("fixes") or ()) or "list more types and zones"
    report(f"Group {props.get('group')}: every zone it may launch spot into scores below {threshold} of 10 for "
           f"{props.get('targetCapacity')} x {', '.join(props.get('instanceTypes') or ())} ({zones}): its nodes are "
           f"unlikely to start. Fix: {fixes} (the plan's Capacity section prices each), or lower minSpotScore for "
           "this stack in the policy pack config.")
