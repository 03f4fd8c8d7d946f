"""capacity-feasible: advisory by default, its threshold and level set in the policy pack config like
every other rule's (`pulumi preview --policy-pack-config` reads the same document)."""

from __future__ import annotations

import pytest

from gpucloud.policy import PackConfig, PlannedResource, evaluate
from gpucloud.policy.model import PolicyConfigError
from gpucloud.policy.registry import RULES
from policy_cases import SPOT_CAPACITY, spot_capacity

NAMES = [rule.name for rule in RULES]
PROPERTIES = {rule.name: list(rule.config_schema or {}) for rule in RULES}


def scored(*scores):
    return [PlannedResource(urn="", type=SPOT_CAPACITY, name="batch", props=spot_capacity(*scores))]


def pack(document):
    return PackConfig.from_document(document, NAMES, PROPERTIES)


def test_a_group_scoring_low_everywhere_is_an_advisory_violation_by_default():
    [violation] = evaluate(scored(2, 3))
    assert (violation.policy_name, violation.enforcement_level) == ("capacity-feasible", "advisory")
    assert "us-east-1a 2, us-east-1b 3" in violation.message and "Fix: list more instance types" in violation.message


def test_the_threshold_and_the_level_follow_the_pack_config():
    strict = pack({"capacity-feasible": {"enforcementLevel": "mandatory", "minSpotScore": 7}})
    [violation] = evaluate(scored(6, 5), strict)
    assert violation.mandatory and "below 7 of 10" in violation.message
    assert evaluate(scored(2, 3), pack({"capacity-feasible": {"minSpotScore": 2}})) == []
    assert evaluate(scored(2, 3), pack({"capacity-feasible": "disabled"})) == []


@pytest.mark.parametrize("value", [0, 11, 4.5, "4", True])
def test_a_threshold_off_ec2s_scale_is_refused(value):
    with pytest.raises(PolicyConfigError, match="minSpotScore must be a whole number from 1 to 10"):
        pack({"capacity-feasible": {"minSpotScore": value}})
