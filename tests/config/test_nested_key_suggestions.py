"""A key written one level too high (`userPolicy` on the group, not under `services.jupyter`) is named
with where it belongs: a newcomer copies keys from the guides without their parents."""

from __future__ import annotations

import pytest

from gpucloud.config import ConfigError, parse_stack_config
from support import minimal_config


def problems_of(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as error:
        parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    return error.value.problems


@pytest.mark.parametrize("key, where", [
    ("userPolicy", "services.jupyter.userPolicy"),
    ("notebookUserPolicy", "services.jupyter.userPolicy"),
    ("prepullImages", "warmPool.prepullImages"),
    ("secretEnv", "services.containers[].secretEnv"),
    ("spotInstancePools", "capacity.allocation.spotInstancePools"),
])
def test_a_group_key_that_belongs_deeper_names_its_place(key, where):
    values = minimal_config()
    values["groups"][0][key] = True
    assert problems_of(values) == [(f"gpu-cloud:groups[0].{key}", f"is not a known key (did you mean '{where}'?)")]


def test_a_near_miss_of_a_key_beside_it_still_wins():
    values = minimal_config()
    values["groups"][0]["maxSiz"] = values["groups"][0].pop("maxSize")
    assert ("gpu-cloud:groups[0].maxSiz", "is not a known key (did you mean 'maxSize'?)") in problems_of(values)


def test_a_key_like_nothing_anywhere_points_at_the_reference():
    values = minimal_config()
    values["groups"][0]["colour"] = "blue"
    assert problems_of(values) == [("gpu-cloud:groups[0].colour",
                                    "is not a known key (check its spelling against the config reference)")]
