"""Print an estimate as an Infracost-style table (resource, quantity, unit, monthly cost)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .estimate import SCENARIOS, CostEstimate, Scenario


def cents(amount: float) -> str:
    """Display rounding only: the estimate itself keeps exact values."""
    return f"${amount:,.2f}"


def _quantity(amount: float) -> str:
    return f"{amount:,.2f}".rstrip("0").rstrip(".") if amount else "0"


def estimate_table(estimate: CostEstimate, scenario: Scenario = "desired") -> Table:
    table = Table(title=f"Monthly cost estimate at {scenario} capacity (USD)", show_footer=True)
    table.add_column("Resource", footer="Total")
    table.add_column("Quantity", justify="right")
    table.add_column("Unit")
    table.add_column("Monthly cost", justify="right", footer=cents(estimate.monthly.get(scenario)))
    for line in estimate.lines:
        table.add_row(line.resource, _quantity(line.quantity.get(scenario)), line.unit, cents(line.monthly.get(scenario)))
    return table


def render_estimate(estimate: CostEstimate, console: Console | None = None, scenario: Scenario = "desired") -> None:
    """Print the table, the min/desired/max totals, the GPU share and the notes. All figures in USD."""
    console = console or Console()
    console.print(estimate_table(estimate, scenario))
    console.print("All amounts are in USD, at 730 hours per month.")
    totals = " · ".join(f"{name} {cents(estimate.monthly.get(name))}" for name in SCENARIOS)
    console.print(f"Monthly total (USD): {totals}")
    share = estimate.gpu_compute_share
    console.print("GPU compute share: " + " · ".join(f"{name} {share.get(name):.0%}" for name in SCENARIOS))
    for group in estimate.groups:
        for note in group.notes:
            console.print(f"  {group.name}: {note}")
