"""The estimate's figures: one value per scenario, the cost and unpriced lines, and the group and
stack totals (`gpucloud.pricing.estimate` computes them; the renderer and the budget check read them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .catalog import HOURS_PER_MONTH, PriceNotFound

Scenario = Literal["min", "desired", "max"]
SCENARIOS: tuple[Scenario, ...] = ("min", "desired", "max")


class EstimateModel(BaseModel):
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)


class ScenarioValues(EstimateModel):
    """One figure per scenario: minSize, desired (initial) capacity and maxSize."""

    min: float = 0.0
    desired: float = 0.0
    max: float = 0.0

    def get(self, scenario: Scenario) -> float:
        return getattr(self, scenario)

    def __add__(self, other: ScenarioValues) -> ScenarioValues:
        return ScenarioValues(min=self.min + other.min, desired=self.desired + other.desired, max=self.max + other.max)


def scenario_values(figures: dict[Scenario, float]) -> ScenarioValues:
    return ScenarioValues(**figures)


def flat(figure: float) -> ScenarioValues:
    """The same figure in every scenario: what is billed whatever the fleet does."""
    return ScenarioValues(min=figure, desired=figure, max=figure)


class CostLine(EstimateModel):
    """One Infracost-style line: what is billed, how much of it, at what unit price."""

    resource: str
    quantity: ScenarioValues
    unit: str
    unit_price: ScenarioValues
    monthly: ScenarioValues
    note: str = ""


class UnpricedLine(EstimateModel):
    """Something the stack runs that the catalog has no price for: left out of every total."""

    resource: str
    quantity: ScenarioValues
    unit: str
    reason: str


class GroupEstimate(EstimateModel):
    name: str
    instance_type: str = Field(description="priced type for the min and desired scenarios")
    max_instance_type: str = Field(description="priced type for the max scenario")
    monthly: ScenarioValues
    on_demand: ScenarioValues
    spot: ScenarioValues
    storage: ScenarioValues
    instance_hours: ScenarioValues
    notes: list[str] = Field(default_factory=list)

    @property
    def gpu_compute(self) -> ScenarioValues:
        return self.on_demand + self.spot


class CostEstimate(EstimateModel):
    currency: Literal["USD"] = "USD"
    hours_per_month: int = HOURS_PER_MONTH
    monthly: ScenarioValues
    groups: list[GroupEstimate]
    lines: list[CostLine]
    unpriced: list[UnpricedLine] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        """False when some line has no price: the totals are then lower than the real cost."""
        return not self.unpriced

    def partial_in(self, scenario: Scenario) -> bool:
        """Whether an unpriced line counts in this scenario, so its total is a lower bound."""
        return any(line.quantity.get(scenario) > 0 for line in self.unpriced)

    @property
    def gpu_compute(self) -> ScenarioValues:
        total = ScenarioValues()
        for group in self.groups:
            total = total + group.gpu_compute
        return total

    @property
    def gpu_compute_share(self) -> ScenarioValues:
        """Fraction of the stack's monthly cost that is GPU instance time (0 when the total is 0)."""
        compute = self.gpu_compute
        return scenario_values({
            scenario: (compute.get(scenario) / self.monthly.get(scenario)) if self.monthly.get(scenario) else 0.0
            for scenario in SCENARIOS
        })

    def to_dict(self) -> dict:
        """The JSON document: currency, hoursPerMonth, monthly, groups, lines, unpriced (exact values)."""
        return self.model_dump(mode="json", by_alias=True)


def cents(amount: float) -> str:
    """Display rounding only: the estimate itself keeps exact values."""
    return f"${amount:,.2f}"


def lookup(find, *arguments):
    """The catalog row, or the reason there is none."""
    try:
        return find(*arguments), None
    except PriceNotFound as error:
        return None, str(error)
