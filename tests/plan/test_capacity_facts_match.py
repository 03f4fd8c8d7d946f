"""The capacity line reads only scores that answer the group as the stack has it, and suggests only
what the same plan would take: the "same GPU" fix names types the region offers (the plan refuses the
others), a score taken for another target capacity than the group's spot instances at maxSize is not
read as the group's, and scores the facts hold for a group the stack lacks are named on one line."""

from __future__ import annotations

import datetime

import pytest

from gpucloud.plan import plan_stack
from gpucloud.plan.capacity_fixes import Prices, same_gpu_types
from gpucloud.plan.capacity_line import check_capacity
from gpucloud.testing.capacity_facts import CapacityFacts
from gpucloud.testing.facts import AccountFacts
from support import minimal_config, settings_for
from test_capacity_plan import TAKEN, resolved

TRAINERS = {"name": "trainers", "instanceTypes": ["p5en.48xlarge", "p5.48xlarge"], "multiNode": True, "minSize": 0,
            "maxSize": 4}


def scores(group: str, target: int, **zones: int) -> dict:
    return {"group": group, "instanceTypes": ["p5en.48xlarge", "p5.48xlarge"], "targetCapacity": target, "takenAt": TAKEN,
            "regionScore": 4, "zoneScores": {zone.replace("_", "-"): score for zone, score in zones.items()}}


@pytest.fixture(scope="module")
def planned():
    settings = settings_for(minimal_config(groups=[TRAINERS], budget={"monthlyUsd": 500000}))
    capacity = {"spotScores": [scores("trainers", 4, us_east_1a=5, us_east_1b=3, us_east_1c=4),
                               scores("trainer", 4, us_east_1a=9)]}
    facts = AccountFacts.model_validate({"snapshot": {"takenOn": "2026-11-28", "accountId": "123456789012",
                                                      "region": "us-east-1"}, "capacity": capacity})
    return plan_stack(settings, facts=facts, now=TAKEN + datetime.timedelta(hours=1))


def test_the_same_gpu_fix_names_only_types_the_region_offers(planned):
    [entry] = planned.capacity
    assert entry["verdict"] == "thin"
    fixes = " / ".join(fix["fix"] for fix in entry["fixes"])
    assert "p5e.48xlarge" not in fixes, "the engine's us-east-1 offers no p5e.48xlarge: the plan would refuse it"
    assert "set onDemandBaseCapacity" in fixes


def test_the_filter_is_the_region_s_offerings():
    from gpucloud.lookups import ResolvedGroup
    from gpucloud.lookups.facts import Ami, InstanceTypeFacts

    settings = settings_for(minimal_config(groups=[TRAINERS], budget={"monthlyUsd": 500000}))
    h200 = InstanceTypeFacts(name="p5en.48xlarge", gpu_count=8, gpu_model="H200", gpu_memory_mib=144384,
                             efa_supported=True, efa_max_interfaces=16, network_cards=16, instance_store_disks=8,
                             architectures=("x86_64",))
    group = ResolvedGroup(config=settings.config.groups[0], instance_types=(h200,), subnets=(), zones=("us-east-1a",),
                          ami=Ami(id="ami-0123456789abcdef0", root_device_name="/dev/sda1", architecture="x86_64"))
    prices = Prices("us-east-1", None, TAKEN)
    assert [name for name, _gpus, _price in same_gpu_types(group, prices)] == ["p5e.48xlarge"]
    assert same_gpu_types(group, prices, frozenset({"p5en.48xlarge", "p5.48xlarge"})) == []


def test_scores_for_another_group_name_are_said_on_one_line(planned):
    [finding] = [finding for finding in planned.findings if finding.rule == "capacity-scores-unknown-group"]
    assert finding.severity == "warning" and "\n" not in finding.message
    assert finding.message.startswith("the account facts' capacity.spotScores score group(s) trainer, which the stack "
                                      "does not have (its groups: trainers): their scores are not read")
    assert not planned.failed


def test_a_score_taken_for_another_target_capacity_is_not_the_group_s():
    settings = settings_for(minimal_config(groups=[
        {"name": "sparse", "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"], "maxSize": 4}]))
    facts = CapacityFacts.model_validate({"spotScores": [{
        "group": "sparse", "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"], "targetCapacity": 2, "takenAt": TAKEN,
        "regionScore": 9, "zoneScores": {"us-east-1a": 9}}]})

    [entry], violations = check_capacity([resolved(settings, 0)], facts, "us-east-1", None, TAKEN)
    assert entry["verdict"] == "not checked" and violations == []
    assert entry["reason"] == ("the facts scored 2 spot instance(s), and the group runs 4 at maxSize 4: "
                               "take the snapshot again")
