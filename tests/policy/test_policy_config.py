"""Policy config values and enforcement levels: what a stack may set, and that evaluate applies it to every policy."""

from __future__ import annotations

import pytest

from gpucloud.policy import RESOURCE_RULES, RULES, PackConfig, PolicyConfig, PolicyConfigError, evaluate
from policy_cases import GROUP, VOLUME, group, planned

POLICY_NAMES = [rule.name for rule in RULES]


def test_group_cap_below_one_is_refused_and_one_is_accepted():
    with pytest.raises(PolicyConfigError, match="positive finite number"):
        PolicyConfig.from_mapping({"maxGroupSize": 0})
    assert PolicyConfig.from_mapping({"maxGroupSize": 1}).max_group_size == 1


def test_group_cap_schema_has_the_same_lower_bound_as_the_config():
    [rule] = [rule for rule in RESOURCE_RULES if rule.name == "asg-bounded-and-rebalanced"]

    assert rule.config_schema["maxGroupSize"]["minimum"] == 1


def test_required_tags_given_as_one_string_are_refused():
    with pytest.raises(PolicyConfigError, match="requiredTags must be a list"):
        PolicyConfig.from_mapping({"requiredTags": "Project"})


def test_pack_config_properties_reach_the_policy_they_name():
    config = PackConfig.from_document({"asg-bounded-and-rebalanced": {"maxGroupSize": 64}}, POLICY_NAMES)

    violations = evaluate([planned(GROUP, "vision-gpu-asg", group(maxSize=40))], config)

    assert "asg-bounded-and-rebalanced" not in {violation.policy_name for violation in violations}


def test_disabling_the_first_policy_leaves_the_later_ones_running():
    scratch = planned(VOLUME, "scratch", {"size": 100, "tags": {"Project": "vision"}})
    config = PackConfig.from_document(
        {"ebs-encrypted-with-cmk": "disabled", "gpu-group-has-scale-in-path": "disabled"}, POLICY_NAMES
    )

    violations = evaluate([scratch, planned(GROUP, "vision-gpu-asg", group())], config)

    assert {violation.policy_name for violation in violations} == {"required-tags", "data-volume-retained"}
