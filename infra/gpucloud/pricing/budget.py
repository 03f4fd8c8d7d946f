"""Compare an estimate with the project's monthly budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .estimate import CostEstimate, Scenario
from .render import cents


@dataclass(frozen=True)
class Finding:
    """One budget check result: a warning (desired capacity over budget) or a failure (minimum over budget)."""

    severity: Literal["warning", "failure"]
    rule: str
    message: str


def _groups_at(estimate: CostEstimate, scenario: Scenario) -> str:
    costly = sorted(
        (group for group in estimate.groups if group.monthly.get(scenario) > 0),
        key=lambda group: group.monthly.get(scenario),
        reverse=True,
    )
    if not costly:
        return "no group runs instances; the cost is storage and the KMS key"
    return "groups: " + ", ".join(f"{group.name} {cents(group.monthly.get(scenario))}" for group in costly)


def budget_findings(estimate: CostEstimate, monthly_budget_usd: float) -> list[Finding]:
    """A failure when the stack at minimum capacity alone exceeds the budget (then no separate warning),
    otherwise a warning when it exceeds it at desired capacity. Compares exact values, not rounded ones."""
    if estimate.monthly.min > monthly_budget_usd:
        return [Finding(
            severity="failure",
            rule="budget-exceeded-at-minimum",
            message=(
                f"the stack costs {cents(estimate.monthly.min)} per month at minimum capacity, above the monthly "
                f"budget of {cents(monthly_budget_usd)} ({_groups_at(estimate, 'min')}); lower minSize, schedule "
                "the groups down, or raise the budget"
            ),
        )]
    if estimate.monthly.desired > monthly_budget_usd:
        return [Finding(
            severity="warning",
            rule="budget-exceeded-at-desired",
            message=(
                f"the stack costs {cents(estimate.monthly.desired)} per month at desired capacity, above the monthly "
                f"budget of {cents(monthly_budget_usd)} ({_groups_at(estimate, 'desired')}); lower desiredCapacity "
                "or add schedules that scale down off-hours"
            ),
        )]
    return []
