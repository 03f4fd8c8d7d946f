"""The plan's capacity line: one stack of three spot groups planned once against recorded capacity
facts (tests/fixtures/capacity/three-verdicts.yaml) says good, thin and unlikely, prices the fixes,
runs capacity-feasible on the scores and prices spot at the recorded prices; without facts, or with
facts a day old, it says capacity not checked and fails nothing."""

from __future__ import annotations

import datetime
import io

import pytest
from rich.console import Console

from gpucloud.plan import plan_stack
from gpucloud.plan.capacity_line import render_capacity
from gpucloud.plan.model import dumps
from gpucloud.testing.facts import load_facts
from paths import ROOT
from support import minimal_config, settings_for

UTC = datetime.timezone.utc
TAKEN = datetime.datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
FACTS = ROOT / "tests" / "fixtures" / "capacity" / "three-verdicts.yaml"
GROUPS = [
    {"name": "steady", "instanceTypes": ["g5.xlarge", "g5.2xlarge", "g6.xlarge"], "maxSize": 2},
    {"name": "sparse", "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"], "maxSize": 4,
     "capacity": {"allocation": {"spot": "lowest-price", "spotInstancePools": 2}}},
    {"name": "scarce", "instanceTypes": ["p5.48xlarge"], "maxSize": 2, "multiNode": True},
]


@pytest.fixture(scope="module")
def settings():
    return settings_for(minimal_config(groups=GROUPS, budget={"monthlyUsd": 500000}))


@pytest.fixture(scope="module")
def planned(settings):
    return plan_stack(settings, facts=load_facts(FACTS), now=TAKEN + datetime.timedelta(hours=3))


def by_group(plan):
    return {entry["group"]: entry for entry in plan.capacity}


def rendered(plan) -> str:
    out = io.StringIO()
    render_capacity(plan.capacity, Console(file=out, width=400))
    return out.getvalue()


def test_the_best_zone_of_each_group_gives_its_verdict(planned):
    entries = by_group(planned)
    assert {name: entry["verdict"] for name, entry in entries.items()} == {
        "steady": "good", "sparse": "thin", "scarce": "unlikely"}
    zones = planned.capacity[0]["zones"]
    assert [candidate["zone"] for candidate in entries["steady"]["candidates"]] == zones
    assert entries["steady"]["fixes"] == [], "a good group needs no fix"
    assert len(entries["scarce"]["candidates"]) == 1, "a multiNode group launches into one zone"


def test_the_capacity_line_shows_scores_age_and_allocation(planned):
    text = rendered(planned)
    zones = planned.capacity[1]["zones"]
    assert f"sparse: thin: g6e.xlarge, g6e.2xlarge x {zones[0]} 5, {zones[1]} 4 (region 5; for 4 spot instances " \
           "at maxSize; scores taken 3 h ago)" in text
    assert "sparse: spot lowest-price, 2 pools (stack file): the cheapest pools only" in text
    assert "on-demand prioritized (default) in the order g5.xlarge > g5.2xlarge > g6.xlarge" in text
    assert "zones balanced-best-effort: a zone that fails to launch is passed over for another" in text


def test_a_thin_group_is_told_the_fixes_and_what_each_costs(planned):
    fixes = {fix["fix"].split(" ")[0] + " " + fix["fix"].split(" ")[1]: fix for fix in by_group(planned)["sparse"]["fixes"]}
    more_types = next(fix for fix in fixes.values() if fix["fix"].startswith("list more instance types"))
    assert "g6e.4xlarge (1 x L40S)" in more_types["fix"] and "g6e.4xlarge $" in more_types["cost"]
    zones = next(fix for fix in fixes.values() if "network.zones" in fix["fix"])
    assert "us-east-1c (score 8)" in zones["fix"] and "NAT gateway per zone ($0.045/h each" in zones["cost"]
    prioritized = next(fix for fix in fixes.values() if "capacity-optimized-prioritized" in fix["fix"])
    assert "recorded spot price, 2026-11-28 19:20 UTC" in prioritized["cost"], "the zones' dearest recorded price"
    base = next(fix for fix in fixes.values() if fix["fix"].startswith("set onDemandBaseCapacity: 1"))
    assert "against spot $1.012/h, recorded spot price" in base["cost"]


def test_an_unlikely_p5_group_is_offered_the_reservation_and_the_block_it_could_use(planned):
    fixes = [fix["fix"] + " / " + fix["cost"] for fix in by_group(planned)["scarce"]["fixes"]]
    [reservation] = [fix for fix in fixes if "cr-0a1b2c3d4e5f60718" in fix]
    assert "targeted" in reservation and "capacity.reservations.ids" in reservation
    [block] = [fix for fix in fixes if "Capacity Block" in fix]
    assert "2 x p5.48xlarge in us-east-1b from 2026-12-02 11:30 UTC" in block and "$1,671.36 upfront for 24 h" in block
    assert any("move the group to" in fix for fix in fixes), "one zone: it moves, it does not spread"


def test_capacity_feasible_reports_only_the_unlikely_group_advisory(planned):
    [violation] = [v for v in planned.policy_violations if v.policy_name == "capacity-feasible"]
    assert violation.enforcement_level == "advisory" and violation.message.startswith("Group scarce:")
    assert not planned.failed


def test_json_carries_each_groups_capacity(planned):
    document = planned.to_preview_json()
    assert [entry["group"] for entry in document["capacity"]] == ["steady", "sparse", "scarce"]
    assert document["capacity"][2]["candidates"][0]["score"] in (1, 2)
    assert '"verdict": "thin"' in dumps(document)


def test_spot_is_priced_at_the_recorded_price_where_the_facts_have_one(planned):
    lines = {line.resource: line for line in planned.cost_estimate.lines}
    sparse = lines["sparse/instances (spot)"]
    assert sparse.unit_price.desired == pytest.approx(1.0115), "the dearest of the group's zones"
    assert sparse.note == "g6e.xlarge: recorded spot price, 2026-11-28 19:20 UTC"
    assert lines["steady/instances (spot)"].note == "on-demand price less the family's conservative spot discount"
    [sparse_estimate] = [group for group in planned.cost_estimate.groups if group.name == "sparse"]
    assert "spot priced at g6e.xlarge: recorded spot price, 2026-11-28 19:20 UTC" in sparse_estimate.notes


def resolved(settings, index):
    """A group as resolve_stack gives it: its config, its types' GPU facts and its two zones."""
    from gpucloud.lookups import ResolvedGroup
    from gpucloud.lookups.facts import Ami, InstanceTypeFacts

    config = settings.config.groups[index]
    kinds = tuple(InstanceTypeFacts(name=name, gpu_count=1, gpu_model="L40S", gpu_memory_mib=46068, efa_supported=False,
                                    efa_max_interfaces=0, network_cards=1, instance_store_disks=1,
                                    architectures=("x86_64",)) for name in config.instance_types)
    return ResolvedGroup(config=config, instance_types=kinds, subnets=(), zones=("us-east-1a", "us-east-1b"),
                         ami=Ami(id="ami-0123456789abcdef0", root_device_name="/dev/sda1", architecture="x86_64"))


def section(entries) -> str:
    out = io.StringIO()
    render_capacity(entries, Console(file=out, width=400))
    return out.getvalue()


def test_scores_a_day_old_are_not_checked_and_say_how_old(settings):
    from gpucloud.plan.capacity_line import check_capacity

    facts = load_facts(FACTS).capacity
    entries, violations = check_capacity([resolved(settings, 1)], facts, "us-east-1", None,
                                         TAKEN + datetime.timedelta(hours=30))
    assert "    sparse: capacity facts are 30 h old (more than 24): not checked\n" in section(entries)
    assert violations == [] and entries[0]["ageHours"] == 30.0


def test_without_capacity_facts_the_plan_says_not_checked_on_one_line(settings):
    from gpucloud.plan.capacity_line import check_capacity

    entries, violations = check_capacity([resolved(settings, 0), resolved(settings, 1)], None, "us-east-1", None, TAKEN)
    text = section(entries)
    assert text.count("not checked") == 1 and "Capacity not checked: no capacity facts" in text
    assert "    sparse: spot lowest-price, 2 pools (stack file)" in text, "the allocation is explained all the same"
    assert violations == []


def test_a_refused_score_request_leaves_the_group_not_checked(settings):
    from gpucloud.plan.capacity_line import check_capacity
    from gpucloud.testing.capacity_facts import CapacityFacts

    facts = CapacityFacts.model_validate({"spotScores": [{
        "group": "sparse", "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"], "targetCapacity": 4, "takenAt": TAKEN,
        "notScored": "UnauthorizedOperation: You are not authorized to perform this operation."}]})
    [entry], _ = check_capacity([resolved(settings, 1)], facts, "us-east-1", None, TAKEN)
    assert entry["verdict"] == "not checked" and "UnauthorizedOperation" in entry["reason"]


EXAMPLE = ROOT / "stacks" / "own-vpc-example"


def test_the_own_vpc_example_reads_unlikely_when_planned_the_day_its_facts_were_taken():
    """Its facts were taken 2026-11-20 09:00 UTC: planned three hours later its two types score low
    in both of its zones (planned today they are only stale: test_scores_a_day_old_are_not_checked...)."""
    from gpucloud.config import load_stack_file

    settings, facts = load_stack_file(EXAMPLE / "Pulumi.team-vpc.yaml"), load_facts(EXAMPLE / "facts" / "team-vpc.yaml")
    plan = plan_stack(settings, facts=facts, now=datetime.datetime(2026, 11, 20, 12, 0, tzinfo=UTC))

    assert rendered(plan).splitlines()[2] == ("    batch: unlikely: g5.xlarge, g6.xlarge x us-east-1a 3, us-east-1b 2 "
                                              "(region 3; for 4 spot instances at maxSize; scores taken 3 h ago)")
    assert [violation.policy_name for violation in plan.policy_violations] == ["capacity-feasible"]
    assert not plan.failed


def test_a_group_on_reservations_fills_them_before_balancing_its_zones():
    from gpucloud.plan.capacity_line import allocation_line, allocation

    reserved = settings_for(minimal_config(groups=[{
        "name": "serve", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "spotPercent": 0,
        "capacity": {"reservations": {"ids": ["cr-0a1b2c3d4e5f60718"]}}}])).config.groups[0]
    line = allocation_line(allocation(reserved, ["g5.xlarge"]))
    assert line == ("on-demand prioritized (default) in the order g5.xlarge; capacity rebalancing off (default); "
                    "zones reservations-then-balanced: reservations first, then balanced over the healthy zones")
