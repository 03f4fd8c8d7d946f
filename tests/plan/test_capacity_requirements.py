"""A group of instanceRequirements gets its capacity line from the scores EC2 gave its requirements
(`account snapshot` asks GetSpotPlacementScores with InstanceRequirementsWithMetadata), over the
types the plan resolved them to; scores of other requirements are not its own, and the fixes it is
told suit a group of requirements (no prioritized strategy, which Auto Scaling refuses there)."""

from __future__ import annotations

import datetime

from gpucloud.config import parse_stack_config
from gpucloud.lookups.requirements import ec2_instance_requirements
from gpucloud.plan import plan_stack
from gpucloud.testing.facts import AccountFacts
from support import minimal_config, settings_for

UTC = datetime.timezone.utc
TAKEN = datetime.datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
REQUIREMENTS = {"gpuCount": {"min": 1, "max": 1}, "allowedInstanceTypes": ["g6.*"], "vcpus": {"max": 8}}
GROUP = {"name": "l4", "instanceRequirements": REQUIREMENTS, "maxSize": 4}


def facts_scoring(requirements: dict, zone_scores: dict[str, int]) -> AccountFacts:
    parsed = parse_stack_config(minimal_config(groups=[{**GROUP, "instanceRequirements": requirements}]), stack="demo",
                                source="stacks/Pulumi.demo.yaml", region="us-east-1")
    asked = ec2_instance_requirements(parsed.config.groups[0].instance_requirements)
    return AccountFacts.model_validate({
        "snapshot": {"takenOn": "2026-11-28", "accountId": "123456789012", "region": "us-east-1"},
        "capacity": {"spotScores": [{"group": "l4", "instanceTypes": [], "instanceRequirements": asked,
                                     "targetCapacity": 4, "takenAt": TAKEN.isoformat(), "regionScore": 4,
                                     "zoneScores": zone_scores}]}})


def test_a_group_of_requirements_is_judged_on_the_scores_of_its_requirements():
    settings = settings_for(minimal_config(groups=[GROUP]))
    plan = plan_stack(settings, facts=facts_scoring(REQUIREMENTS, {"us-east-1a": 5, "us-east-1b": 3}),
                      now=TAKEN + datetime.timedelta(hours=2))

    [entry] = plan.capacity
    assert entry["verdict"] == "thin", entry
    assert entry["instanceTypes"] and all(kind.startswith("g6.") for kind in entry["instanceTypes"])
    scored = {candidate["zone"]: candidate["score"] for candidate in entry["candidates"]}
    assert scored["us-east-1a"] == 5 and scored["us-east-1b"] == 3
    fixes = " | ".join(fix["fix"] for fix in entry["fixes"])
    assert "capacity-optimized-prioritized" not in fixes, "Auto Scaling refuses it with instanceRequirements"
    assert "in instanceTypes" not in fixes and "widen instanceRequirements" in fixes


def test_scores_of_other_requirements_are_not_the_groups():
    settings = settings_for(minimal_config(groups=[GROUP]))
    other = {**REQUIREMENTS, "vcpus": {"max": 16}}
    plan = plan_stack(settings, facts=facts_scoring(other, {"us-east-1a": 9}), now=TAKEN + datetime.timedelta(hours=2))

    [entry] = plan.capacity
    assert (entry["verdict"], entry["reason"]) == (
        "not checked", "the facts scored other instanceRequirements: take the snapshot again")
