"""The node role's inline policies together fit IAM's 10,240 characters (IAM user guide, "IAM and
AWS STS quotas"), or the config refuses the stack on one line naming the key to change, before any
resource is declared (the engine would refuse the role policy only halfway through the plan)."""

from __future__ import annotations

import pytest

from gpucloud.config import IAM_ROLE_POLICY_LIMIT, ConfigError
from gpucloud.config.node_role import node_role_policies_size
from support import minimal_config, settings_for

LONGEST_PROJECT = "p" * 24
LONGEST_STACK = "s" * 15
"""With the project, the 40-character name base `<project>_<stack>`, the longest a stack takes."""


def longest_group(index: int) -> dict:
    return {"name": f"g{index:02d}".ljust(24, "x"), "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2}


def longest_stack(groups: int, **changes) -> dict:
    """The most a node role's policies can name: the longest name base, region and group names,
    Prometheus on (its remote write policy is the role's second inline policy), Session Manager on."""
    return minimal_config(**{"project": LONGEST_PROJECT, "groups": [longest_group(index) for index in range(groups)],
                             "monitoring": {"prometheus": {"enabled": True}}, **changes})


def parse(values: dict):
    return settings_for(values, stack=LONGEST_STACK, region="ap-southeast-7")


def refusal(values: dict) -> tuple[str, str]:
    with pytest.raises(ConfigError) as error:
        parse(values)
    assert "\n" not in str(error.value)
    [problem] = error.value.problems
    return problem


def test_fifty_groups_with_the_longest_names_are_refused_naming_the_groups():
    key, reason = refusal(longest_stack(50))
    assert key == "gpu-cloud:groups"
    assert reason.startswith("50 groups make the node role's inline policies ")
    assert f"above the {IAM_ROLE_POLICY_LIMIT} IAM allows a role" in reason


def test_the_most_longest_named_groups_that_fit_are_accepted_and_one_more_is_refused():
    def fits(groups: int) -> bool:
        try:
            parse(longest_stack(groups))
        except ConfigError:
            return False
        return True

    accepted = [groups for groups in range(1, 51) if fits(groups)]
    most = accepted[-1]
    assert accepted == list(range(1, most + 1)) and 30 <= most < 50
    settings = parse(longest_stack(most))
    assert node_role_policies_size(settings.config, settings.name_base, settings.region) <= IAM_ROLE_POLICY_LIMIT
    key, reason = refusal(longest_stack(most + 1))
    assert key == "gpu-cloud:groups" and "or fewer data prefixes" in reason


def test_prefixes_too_many_even_beside_one_group_are_refused_naming_the_data():
    write_prefixes = [f"runs/{index:02d}/" + "p" * 150 + "/" for index in range(40)]
    key, reason = refusal(longest_stack(1, data={"bucket": "demo-data", "writePrefixes": write_prefixes}))
    assert key == "gpu-cloud:data" and reason.startswith("readPrefixes and writePrefixes make the node role's")


def test_a_shorter_name_base_fits_more_groups():
    """The count uses the stack's own name base (each group's ARN holds it), not the longest one."""
    refusal(longest_stack(40))
    settings_for(longest_stack(40, project="ml"), stack="ml", region="ap-southeast-7")
