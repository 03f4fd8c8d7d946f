"""What reserved capacity does to the estimate, called directly: an On-Demand Capacity Reservation
bills its idle instances at the on-demand rate, a Capacity Block is its total price once and its
instances bill nothing more."""

from __future__ import annotations

from gpucloud.pricing import ReservedCapacity, estimate_stack

from support import assert_cents

HOURS = 730


def test_reservation_bills_its_idle_instances_and_the_group_pays_on_demand_above_it(stack_config, rows):
    config = stack_config({"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 1, "desiredCapacity": 2,
                           "maxSize": 4, "spotPercent": 0})
    held = ReservedCapacity(kind="odcr", instance_type="g5.xlarge", instance_count=2, label="cr-1")

    estimate = estimate_stack(config, "us-east-1", reserved={"serve": held})

    lines = {line.resource: line for line in estimate.lines}
    used, unused = lines["serve/reserved capacity, used (cr-1)"], lines["serve/reserved capacity, unused (cr-1)"]
    above = lines["serve/instances (on-demand)"]
    # min 1: one of the two runs in it, one idles; desired 2: both run; max 4: two more above it.
    assert (used.quantity.min, used.quantity.desired, used.quantity.max) == (HOURS, 2 * HOURS, 2 * HOURS)
    assert (unused.quantity.min, unused.quantity.desired, unused.quantity.max) == (HOURS, 0, 0)
    assert (above.quantity.min, above.quantity.desired, above.quantity.max) == (0, 0, 2 * HOURS)
    hourly = rows.hourly("g5.xlarge", "us-east-1")
    assert_cents(estimate.groups[0].on_demand.min, 2 * HOURS * hourly)
    assert_cents(estimate.groups[0].on_demand.max, 4 * HOURS * hourly)


def test_capacity_block_is_its_total_price_in_every_scenario_and_its_instances_bill_nothing_more(stack_config):
    config = stack_config({"name": "pretrain", "instanceTypes": ["p5.48xlarge"], "minSize": 0, "desiredCapacity": 2,
                           "maxSize": 2, "spotPercent": 0})
    block = ReservedCapacity(kind="capacity-block", instance_type="p5.48xlarge", instance_count=2,
                             upfront_usd=6000.0, hours=96, label="cb-1")

    estimate = estimate_stack(config, "us-east-1", reserved={"pretrain": block})

    lines = {line.resource: line for line in estimate.lines}
    line = lines["pretrain/capacity block (cb-1)"]
    assert line.unit == "block"
    assert (line.monthly.min, line.monthly.desired, line.monthly.max) == (6000.0, 6000.0, 6000.0)
    assert line.quantity.desired == 2 * 96 and line.unit_price.desired == 6000.0 / (2 * 96)
    assert [name for name in lines if name.startswith("pretrain/instances")] == []
    group = estimate.groups[0]
    assert (group.on_demand.min, group.on_demand.max, group.spot.max) == (6000.0, 6000.0, 0)
