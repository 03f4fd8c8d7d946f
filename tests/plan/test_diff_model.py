"""What a plan diff adds up to (`plan/diff_model.py`), on hand-made plans: the monthly cost of both
sides and their difference, a change looked up by name, and the kind `--json` gives each property."""

from __future__ import annotations

import pytest

from gpucloud.plan.diff_model import PlanDiff, PropertyChange, ResourceChange
from gpucloud.plan.model import Plan
from gpucloud.pricing.lines import CostEstimate, ScenarioValues
from gpucloud.testing import AppliedResource

VOLUME = "aws:ebs/volume:Volume"


def plan(monthly: tuple[float, float, float] | None, *, resources: int = 1) -> Plan:
    estimate = None if monthly is None else CostEstimate(
        monthly=ScenarioValues(min=monthly[0], desired=monthly[1], max=monthly[2]), groups=[], lines=[])
    volumes = [AppliedResource(urn=f"urn:pulumi:s::p::{VOLUME}::v{index}", type=VOLUME, name=f"v{index}", custom=True)
               for index in range(resources)]
    return Plan(project="p", stack="s", region="us-east-1", resources=volumes, outputs={}, cost_estimate=estimate)


def test_the_monthly_cost_of_each_side_and_the_difference_per_scenario():
    cost = PlanDiff(base=plan((10.0, 20.0, 30.0)), current=plan((15.0, 20.0, 50.0)), changes=[]).monthly_cost

    assert cost == {"base": {"min": 10.0, "desired": 20.0, "max": 30.0},
                    "current": {"min": 15.0, "desired": 20.0, "max": 50.0},
                    "difference": {"min": 5.0, "desired": 0.0, "max": 20.0}}


def test_a_new_stack_costs_nothing_before_and_an_unpriced_side_gives_no_difference():
    new = PlanDiff(base=plan(None, resources=0), current=plan((1.0, 2.0, 3.0)), changes=[]).monthly_cost

    assert new == {"base": {"min": 0.0, "desired": 0.0, "max": 0.0}, "current": {"min": 1.0, "desired": 2.0, "max": 3.0},
                   "difference": {"min": 1.0, "desired": 2.0, "max": 3.0}}
    assert PlanDiff(base=plan(None), current=plan((1.0, 2.0, 3.0)), changes=[]).monthly_cost is None
    assert PlanDiff(base=plan((1.0, 2.0, 3.0)), current=plan(None), changes=[]).monthly_cost is None
    assert PlanDiff(base=plan(None, resources=0), current=plan(None), changes=[]).monthly_cost is None


def test_a_change_is_found_by_its_name_only_when_one_change_has_it():
    def change(name: str) -> ResourceChange:
        return ResourceChange("create", f"urn:pulumi:s::p::{VOLUME}::{name}", VOLUME, name, None, None)

    diff = PlanDiff(base=plan(None), current=plan(None), changes=[change("a"), change("b"), change("b")])

    assert diff.named("a") is diff.changes[0]
    with pytest.raises(KeyError, match="2 changes name 'b'"):
        diff.named("b")
    with pytest.raises(KeyError, match="0 changes name 'c'"):
        diff.named("c")
    assert diff.summary == {"create": 3} and diff.of("create") == diff.changes and diff.of("delete") == []


def test_each_property_change_has_the_detailed_diff_kind_of_pulumi_preview():
    assert [PropertyChange("size", old, new, forces).kind for old, new, forces in [
        (None, 1, False), (1, None, False), (1, 2, False), (None, 1, True), (1, None, True), (1, 2, True)]] == [
        "add", "delete", "update", "add-replace", "delete-replace", "update-replace"]
