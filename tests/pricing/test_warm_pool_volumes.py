"""A warm pool's stopped instances bill their EBS volumes all month: the estimate counts them, the
pool being what Auto Scaling keeps beside the group (PutWarmPool: the difference between
MaxGroupPreparedCapacity, or else maxSize, and the desired capacity, and at least MinSize)."""

from __future__ import annotations

import pytest

from gpucloud.pricing import estimate_stack

WARM = {"name": "servers", "instanceTypes": ["g6e.2xlarge"], "spotPercent": 0, "rootVolumeGiB": 200}


def pool_line(config):
    [line] = [line for line in estimate_stack(config, "us-east-1").lines if line.resource.startswith("servers/warm pool")]
    return line


@pytest.mark.parametrize("sizes, pool, expected", [
    ({"minSize": 1, "desiredCapacity": 1, "maxSize": 4}, {"minSize": 1}, (3, 3, 1)),
    ({"minSize": 0, "desiredCapacity": 0, "maxSize": 2}, {"minSize": 1, "maxGroupPreparedCapacity": 2}, (2, 2, 1)),
    ({"minSize": 2, "desiredCapacity": 2, "maxSize": 2}, {"minSize": 1}, (1, 1, 1)),
])
def test_the_pool_instances_volumes_are_priced(stack_config, sizes, pool, expected):
    line = pool_line(stack_config({**WARM, **sizes, "warmPool": pool}))
    assert (line.quantity.min, line.quantity.desired, line.quantity.max) == tuple(200.0 * count for count in expected)
    assert line.monthly.desired == pytest.approx(200 * expected[1] * 0.08)
    assert line.unit == "GB-months"


def test_a_group_without_a_pool_has_no_pool_line(stack_config):
    estimate = estimate_stack(stack_config({**WARM, "maxSize": 2}), "us-east-1")
    assert [line for line in estimate.lines if "warm pool" in line.resource] == []
