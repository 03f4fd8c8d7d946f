"""GPU instance time the catalog cannot price: the budget check cannot pass on it.

GPU compute is most of a stack's cost (the estimate's GPU compute share), so a total that leaves it
out ("at least $0.00" in a region the catalog does not cover) says nothing about the budget. The
plan says so on its own summary line and fails the budget check, unless the stack file accepts it
with `gpu-cloud:budget: {acceptUnpricedCompute: true}`; the rest is then checked as before.
"""

from __future__ import annotations

from .budget import Finding
from .lines import CostEstimate, UnpricedLine

ACCEPT_KEY = "gpu-cloud:budget.acceptUnpricedCompute"


def unpriced_compute(estimate: CostEstimate) -> list[UnpricedLine]:
    """The groups' instance-hour lines left unpriced in any scenario (a listed type without a price)."""
    return [line for line in estimate.unpriced
            if line.unit == "instance-hours" and any(line.quantity.get(s) > 0 for s in ("min", "desired", "max"))]


def _named(lines: list[UnpricedLine]) -> str:
    return ", ".join(line.resource for line in lines)


def unpriced_compute_finding(estimate: CostEstimate, accepted: bool) -> Finding | None:
    """A failure while GPU instance time is unpriced and the stack has not accepted it; a warning once it has."""
    lines = unpriced_compute(estimate)
    if not lines:
        return None
    if accepted:
        return Finding(
            severity="warning",
            rule="unpriced-compute-accepted",
            message=(f"GPU compute is not priced ({_named(lines)}) and the stack accepts it ({ACCEPT_KEY}: true): "
                     "the budget is checked without the instances, so it may be exceeded unseen"),
        )
    return Finding(
        severity="failure",
        rule="unpriced-compute",
        message=(f"GPU compute is not priced, so the budget check cannot pass: {_named(lines)} "
                 f"({lines[0].reason}); pick instance types or a region the catalog prices, run "
                 f"`gpucloud prices refresh` for the region, or set {ACCEPT_KEY}: true to accept it"),
    )

