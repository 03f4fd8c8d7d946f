"""Compare an estimate with the project's monthly budget, and say what the estimate leaves unpriced."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .lines import CostEstimate, Scenario
from .lines import cents


@dataclass(frozen=True)
class Finding:
    """One check of the estimate: desired capacity over budget (warning), minimum over budget (failure),
    or lines the catalog cannot price (warning)."""

    severity: Literal["warning", "failure"]
    rule: str
    message: str


def _groups_at(estimate: CostEstimate, scenario: Scenario) -> str:
    costly = sorted(
        (group for group in estimate.groups if group.monthly.get(scenario) > 0),
        key=lambda group: group.monthly.get(scenario),
        reverse=True,
    )
    groups = ("groups: " + ", ".join(f"{group.name} {cents(group.monthly.get(scenario))}" for group in costly)
              if costly else "no group runs instances")
    return f"{groups}; largest lines: {_largest_lines(estimate, scenario)}"


LARGEST_LINES_SHOWN = 3


def _largest_lines(estimate: CostEstimate, scenario: Scenario) -> str:
    """The dearest priced lines in the scenario (a NAT gateway, a group's instances, a volume), so a
    reader sees what to cut first."""
    dearest = sorted((line for line in estimate.lines if line.monthly.get(scenario) > 0),
                     key=lambda line: line.monthly.get(scenario), reverse=True)[:LARGEST_LINES_SHOWN]
    return ", ".join(f"{line.resource} {cents(line.monthly.get(scenario))}" for line in dearest) or "none priced"


def _costs(estimate: CostEstimate, scenario: Scenario) -> str:
    return "costs at least" if estimate.partial_in(scenario) else "costs"


def budget_findings(estimate: CostEstimate, monthly_budget_usd: float) -> list[Finding]:
    """A failure when the stack at minimum capacity alone exceeds the budget (then no separate warning),
    otherwise a warning when it exceeds it at desired capacity. Compares exact values, not rounded ones;
    a partial estimate is checked on its priced part, which is a lower bound."""
    if estimate.monthly.min > monthly_budget_usd:
        return [Finding(
            severity="failure",
            rule="budget-exceeded-at-minimum",
            message=(
                f"the stack {_costs(estimate, 'min')} {cents(estimate.monthly.min)} per month at minimum capacity, "
                "above the monthly "
                f"budget of {cents(monthly_budget_usd)} ({_groups_at(estimate, 'min')}); lower minSize, schedule "
                "the groups down, or raise the budget"
            ),
        )]
    if estimate.monthly.desired > monthly_budget_usd:
        return [Finding(
            severity="warning",
            rule="budget-exceeded-at-desired",
            message=(
                f"the stack {_costs(estimate, 'desired')} {cents(estimate.monthly.desired)} per month at desired "
                "capacity, above the monthly "
                f"budget of {cents(monthly_budget_usd)} ({_groups_at(estimate, 'desired')}); lower desiredCapacity "
                "or add schedules that scale down off-hours"
            ),
        )]
    return []


def unpriced_finding(estimate: CostEstimate) -> Finding | None:
    """A warning naming every line the catalog cannot price, grouped by reason, with the one fix."""
    if estimate.complete:
        return None
    by_reason: dict[str, list[str]] = {}
    for line in estimate.unpriced:
        by_reason.setdefault(line.reason, []).append(line.resource)
    missing = "; ".join(f"{', '.join(resources)}: {reason}" for reason, resources in by_reason.items())
    return Finding(
        severity="warning",
        rule="partial-cost-estimate",
        message=(
            f"the estimate is partial: {len(estimate.unpriced)} line(s) have no price in the catalog, so the real "
            f"monthly cost is higher than the totals shown and the budget is checked on the priced part only "
            f"({missing}); run `gpucloud prices refresh` for this region, or pick instance types the catalog prices"
        ),
    )
