"""Print an estimate as an Infracost-style table (resource, quantity, unit, monthly cost)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .lines import SCENARIOS, CostEstimate, Scenario, cents


def _quantity(amount: float) -> str:
    return f"{amount:,.2f}".rstrip("0").rstrip(".") if amount else "0"


NOT_INCLUDED = (
    "CloudWatch (dashboard, alarms, custom GPU metrics, VPC flow log ingestion), AWS Backup snapshots of "
    "persistent volumes, data transfer and NAT gateway / VPC endpoint data processing (per GB), SNS notifications, "
    "Prometheus queries (per billion samples the dashboards and rules process), the job supervisor's Step "
    "Functions state transitions (per job, about 10 + 9 per node at each poll, $0.025 per 1,000 in us-east-1 "
    "after 4,000 free a month)"
)
"""What the stack creates or causes that the catalog does not price. The job supervisor's
transitions depend on the jobs run, not the stack: figures in docs/guides/training-jobs.md, price
from https://aws.amazon.com/step-functions/pricing/ (Standard workflows, read 2026-11-28)."""


def _total(estimate: CostEstimate, scenario: Scenario) -> str:
    amount = cents(estimate.monthly.get(scenario))
    return f"at least {amount}" if estimate.partial_in(scenario) else amount


def estimate_table(estimate: CostEstimate, scenario: Scenario = "desired") -> Table:
    table = Table(title=f"Monthly cost estimate at {scenario} capacity (USD)", show_footer=True)
    table.add_column("Resource", footer="Total")
    table.add_column("Quantity", justify="right")
    table.add_column("Unit")
    table.add_column("Monthly cost", justify="right", footer=_total(estimate, scenario))
    for line in estimate.lines:
        table.add_row(line.resource, _quantity(line.quantity.get(scenario)), line.unit, cents(line.monthly.get(scenario)))
    for unpriced in estimate.unpriced:
        if unpriced.quantity.get(scenario) > 0:
            table.add_row(unpriced.resource, _quantity(unpriced.quantity.get(scenario)), unpriced.unit, "not priced")
    return table


def render_estimate(estimate: CostEstimate, console: Console | None = None, scenario: Scenario = "desired") -> None:
    """Print the table, the min/desired/max totals, the GPU share, the notes and what is left out. USD."""
    console = console or Console()
    console.print(estimate_table(estimate, scenario))
    console.print("All amounts are in USD, at 730 hours per month.")
    if not estimate.complete:
        console.print(
            f"PARTIAL ESTIMATE: {len(estimate.unpriced)} line(s) have no price in the catalog (see the cost finding); "
            "the real cost is higher than the totals shown."
        )
    totals = " · ".join(f"{name} {_total(estimate, name)}" for name in SCENARIOS)
    console.print(f"Monthly total (USD): {totals}")
    share = estimate.gpu_compute_share
    console.print("GPU compute share: " + " · ".join(f"{name} {share.get(name):.0%}" for name in SCENARIOS))
    for group in estimate.groups:
        for note in group.notes:
            console.print(f"  {group.name}: {note}")
    console.print(f"Not included: {NOT_INCLUDED}.")
