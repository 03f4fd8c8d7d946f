"""Reserved capacity: Capacity Blocks (held or bought), On-Demand Capacity Reservations and warm
pools, from the config's refusals through the engine's record of the account's reservations to
the AWS state and the plan's price."""

from __future__ import annotations

import datetime

import pytest

from gpucloud.config import ConfigError
from gpucloud.plan.findings import reserved_capacity
from gpucloud.pricing import estimate_stack
from gpucloud.testing.facts import AccountFacts, seed_account
from support import deploy, minimal_config, settings_for

UTC = datetime.timezone.utc
START = datetime.datetime(2027, 3, 1, 11, 30, tzinfo=UTC)
END = datetime.datetime(2027, 3, 5, 11, 30, tzinfo=UTC)
BLOCK = "cr-0b1c2d3e4f5a60718"
ODCR = "cr-0a1b2c3d4e5f60718"


def block_group(**changes):
    return {"name": "pretrain", "instanceTypes": ["p5.48xlarge"], "minSize": 2, "maxSize": 2, "spotPercent": 0,
            "capacity": {"capacityBlock": {"reservationId": BLOCK}}, **changes}


def facts(**reservation) -> AccountFacts:
    held = {"id": BLOCK, "instanceType": "p5.48xlarge", "zone": "us-east-1a", "instanceCount": 2, "state": "scheduled",
            "reservationType": "capacity-block", "start": START, "end": END, "upfrontUsd": 6000.0, **reservation}
    odcr = {"id": ODCR, "instanceType": "g5.xlarge", "zone": "us-east-1a", "instanceCount": 2}
    offering = {"id": "cb-0c1d2e3f4a5b60718", "instanceType": "p5.48xlarge", "instanceCount": 2, "zone": "us-east-1b",
                "start": START, "end": END, "durationHours": 96, "upfrontUsd": 7000.0}
    return AccountFacts.model_validate({"capacityReservations": [held, odcr], "capacityBlockOfferings": [offering]})


def problems(error: pytest.ExceptionInfo) -> dict[str, str]:
    return dict(error.value.problems)


@pytest.mark.parametrize(
    "changes, key, reason",
    [
        ({"spotPercent": 50}, "groups[0]", "capacityBlock runs on-demand instances"),
        ({"instanceTypes": ["p5.48xlarge", "p5e.48xlarge"]}, "groups[0]", "holds one instance type"),
        ({"warmPool": {}}, "groups[0]", "warmPool cannot be combined with capacity.capacityBlock"),
        ({"capacity": {"capacityBlock": {"offering": {"instanceType": "p5.48xlarge", "count": 3, "durationHours": 96,
                                                      "startAfter": "2027-03-01", "endBefore": "2027-03-10"}}}},
         "groups[0].capacity.capacityBlock.offering.count", "not a Capacity Block size"),
        ({"capacity": {"capacityBlock": {"offering": {"instanceType": "p5.48xlarge", "count": 2, "durationHours": 360,
                                                      "startAfter": "2027-03-01", "endBefore": "2027-04-10"}}}},
         "groups[0].capacity.capacityBlock.offering.durationHours", "not a Capacity Block duration"),
        ({"capacity": {"capacityBlock": {"offering": {"instanceType": "p5.48xlarge", "count": 2, "durationHours": 96,
                                                      "startAfter": "2027-03-01", "endBefore": "2027-03-03"}}}},
         "groups[0].capacity.capacityBlock.offering", "shorter than durationHours"),
        ({"capacity": {"capacityBlock": {"reservationId": BLOCK}, "reservations": {"ids": [ODCR]}}},
         "groups[0].capacity", "not both"),
        ({"capacity": {"reservations": {}}}, "groups[0].capacity.reservations", "lists no reservation"),
        ({"capacity": {"capacityBlock": {"offering": {"instanceType": "p5.48xlarge", "count": 2, "durationHours": 96,
                                                      "startAfter": "2027-03-01", "endBefore": "2027-03-10",
                                                      "purchase": True}}}},
         "groups[0].capacity.capacityBlock.offering", "gpucloud capacity buy"),
        ({"capacity": {"reservations": {"ids": [ODCR], "preference": "none"}}},
         "groups[0].capacity.reservations", "takes no reservation target"),
    ],
)
def test_capacity_settings_aws_would_refuse_are_config_errors(changes, key, reason):
    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(groups=[block_group(**changes)]))

    assert reason in problems(error)[f"gpu-cloud:{key}"]


@pytest.mark.parametrize(
    "pool, group_changes, reason",
    [
        ({}, {"instanceTypes": ["g5.xlarge", "g6.xlarge"], "spotPercent": 0}, "mixed instances policy or spot"),
        ({}, {"spotPercent": 100}, "mixed instances policy or spot"),
        ({"poolState": "Running"}, {"spotPercent": 0}, "gate"),
        ({"maxGroupPreparedCapacity": 1}, {"spotPercent": 0, "maxSize": 2}, "below maxSize"),
    ],
)
def test_warm_pools_auto_scaling_refuses_are_config_errors(pool, group_changes, reason):
    group = {"name": "serve", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "warmPool": pool, **group_changes}

    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(groups=[group]))

    assert reason in problems(error)["gpu-cloud:groups[0]"]


def test_a_group_in_a_held_capacity_block_targets_it_waits_for_it_and_leaves_before_it_ends(account):
    seed_account(account, facts())

    deployment = deploy(settings_for(minimal_config(groups=[block_group()])), account)

    ec2, autoscaling = deployment.client("ec2"), deployment.client("autoscaling")
    [template] = ec2.describe_launch_templates()["LaunchTemplates"]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["InstanceType"] == "p5.48xlarge", "a group without a mixed instances policy launches its template's type"
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {"CapacityReservationId": BLOCK}
    [group] = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert "MixedInstancesPolicy" not in group and group["LaunchTemplate"]["LaunchTemplateId"] == template["LaunchTemplateId"]
    assert (group["MinSize"], group["DesiredCapacity"]) == (0, 0), "the block has not started: nothing can launch yet"
    assert {subnet["AvailabilityZone"] for subnet in ec2.describe_subnets(SubnetIds=group["VPCZoneIdentifier"].split(","))["Subnets"]} == {"us-east-1a"}
    actions = {"-".join(action["ScheduledActionName"].split("-")[-2:]): action
               for action in autoscaling.describe_scheduled_actions()["ScheduledUpdateGroupActions"]}
    assert actions["block-start"]["StartTime"] == START and actions["block-start"]["DesiredCapacity"] == 2
    assert actions["block-end"]["StartTime"] == END - datetime.timedelta(minutes=45)
    assert (actions["block-end"]["MinSize"], actions["block-end"]["MaxSize"], actions["block-end"]["DesiredCapacity"]) == (0, 0, 0)


@pytest.mark.parametrize(
    "reservation, reason",
    [
        ({"instanceType": "p4d.24xlarge"}, "reserves p4d.24xlarge, which the group does not list"),
        ({"state": "expired"}, "is expired: it takes no instances"),
        ({"instanceCount": 1}, "holds 1 instances, fewer than maxSize 2"),
        ({"reservationType": "default"}, "is an On-Demand Capacity Reservation, not a Capacity Block"),
        ({"platform": "Windows"}, "reserves the Windows platform"),
        ({"id": "cr-0ffffffffffffffff"}, "does not exist in us-east-1"),
    ],
)
def test_a_capacity_block_the_group_cannot_use_is_refused_naming_it(account, reservation, reason):
    seed_account(account, facts(**reservation))

    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[block_group()])), account)

    assert reason in problems(error)["gpu-cloud:groups[0].capacity.capacityBlock.reservationId"]
    assert account.client("kms").list_keys()["Keys"] == [], "nothing is created for a bad reference"


def odcr_group(preference: str = "capacity-reservations-first", **changes) -> dict:
    return {"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 4, "spotPercent": 0,
            "capacity": {"reservations": {"ids": [ODCR], "preference": preference}}, **changes}


def test_a_group_on_reservations_launches_into_them_first(account):
    seed_account(account, facts())

    deployment = deploy(settings_for(minimal_config(groups=[odcr_group()])), account)

    [group] = deployment.of_type("aws:autoscaling/group:Group")
    assert group.inputs["capacityReservationSpecification"] == {
        "capacityReservationPreference": "capacity-reservations-first",
        "capacityReservationTarget": {"capacityReservationIds": [ODCR]},
    }
    assert group.inputs["availabilityZoneDistribution"] == {"capacityDistributionStrategy": "reservations-then-balanced"}


@pytest.mark.parametrize(
    "reservation, reason",
    [
        ({"instanceType": "g6.xlarge"}, "reserves g6.xlarge, which the group does not list"),
        ({"state": "cancelled"}, "is cancelled"),
        ({"zone": "us-east-1e"}, "is in us-east-1e, not in a zone of the group's subnets"),
    ],
)
def test_a_reservation_the_group_cannot_use_is_refused_naming_it(account, reservation, reason):
    held = {"id": ODCR, "instanceType": "g5.xlarge", "zone": "us-east-1a", "instanceCount": 2, **reservation}
    seed_account(account, AccountFacts.model_validate({"capacityReservations": [held]}))

    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[odcr_group()])), account)

    assert reason in problems(error)["gpu-cloud:groups[0].capacity.reservations.ids[0]"]


def test_a_stopped_warm_pool_reaches_auto_scaling_and_its_nodes_gate_again_as_they_start(account):
    from gpucloud.userdata.layout import GATE_UNIT
    from gpucloud.userdata.scripts import UNITS

    group = {"name": "serve", "instanceTypes": ["g5.xlarge"], "maxSize": 4, "spotPercent": 0,
             "warmPool": {"minSize": 1, "reuseOnScaleIn": True}}

    deployment = deploy(settings_for(minimal_config(groups=[group])), account)

    autoscaling = deployment.client("autoscaling")
    pool = autoscaling.describe_warm_pool(AutoScalingGroupName="gpu-cloud-demo-serve")["WarmPoolConfiguration"]
    assert (pool["MinSize"], pool["PoolState"], pool["InstanceReusePolicy"]) == (1, "Stopped", {"ReuseOnScaleIn": True})
    ec2 = deployment.client("ec2")
    [template] = ec2.describe_launch_templates()["LaunchTemplates"]
    [version] = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"]
    assert version["LaunchTemplateData"]["InstanceType"] == "g5.xlarge", "the group launches its template directly"
    [hook] = [hook for hook in autoscaling.describe_lifecycle_hooks(AutoScalingGroupName="gpu-cloud-demo-serve")["LifecycleHooks"]
              if hook["LifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"]
    # A pool instance leaving the pool fires the launching hook again and boots again: the gate,
    # an enabled oneshot unit, runs at every boot and completes that hook.
    assert hook["DefaultResult"] == "ABANDON"
    assert "WantedBy=multi-user.target" in UNITS[GATE_UNIT] and "Type=oneshot" in UNITS[GATE_UNIT]


def test_a_hibernated_pool_needs_a_type_that_hibernates(account):
    group = {"name": "serve", "instanceTypes": ["p5.48xlarge"], "maxSize": 1, "spotPercent": 0,
             "warmPool": {"poolState": "Hibernated"}}

    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[group])), account)

    assert "p5.48xlarge cannot hibernate" in problems(error)["gpu-cloud:groups[0].warmPool.poolState"]


def test_reserved_capacity_is_priced_used_or_not_and_a_block_at_its_total():
    settings = settings_for(minimal_config(groups=[odcr_group(), block_group(name="pretrain")]))
    held = {item.id: item.model_dump() for item in facts().capacity_reservations}

    estimate = estimate_stack(settings.config, "us-east-1", reserved=reserved_capacity(settings, held))

    lines = {line.resource: line for line in estimate.lines}
    used, unused = lines[f"serve/reserved capacity, used (2 x g5.xlarge in {ODCR})"], lines[f"serve/reserved capacity, unused (2 x g5.xlarge in {ODCR})"]
    assert (used.quantity.min, unused.quantity.min) == (730, 730), "at minSize 1: one reserved instance runs, one idles"
    assert (used.quantity.max, unused.quantity.max) == (1460, 0)
    assert lines["serve/instances (on-demand)"].quantity.max == 2 * 730, "maxSize 4: two instances above the reservation"
    block = next(line for name, line in lines.items() if name.startswith("pretrain/capacity block"))
    assert block.monthly.desired == 6000.0 and block.quantity.desired == 2 * 96
    assert "pretrain/instances (on-demand)" not in lines


def test_the_capacity_block_example_plans_clean_on_its_account_facts():
    from support import ROOT, plan_once

    example = ROOT / "stacks" / "capacity-block-example"

    plan = plan_once(example / "Pulumi.frontier-train.yaml", example / "facts" / "frontier-train.yaml")

    assert plan.policy_violations == []
    assert [finding for finding in plan.findings if finding.severity == "failure"] == []
    assert any(finding.rule == "not-validated" for finding in plan.findings)
    [line] = [line for line in plan.cost_estimate.lines if "capacity block" in line.resource]
    assert line.resource.startswith("pretrain/capacity block (cr-0b1c2d3e4f5a60718: 2 x p5.48xlarge, 96 h")
    [template] = [r for r in plan.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}


def test_the_created_network_puts_a_zone_where_the_reservations_are(account):
    held = {"id": ODCR, "instanceType": "g5.xlarge", "zone": "us-east-1d", "instanceCount": 2}
    seed_account(account, AccountFacts.model_validate({"capacityReservations": [held]}))

    deployment = deploy(settings_for(minimal_config(groups=[odcr_group()])), account)

    [group] = deployment.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    zones = {subnet["AvailabilityZone"] for subnet in deployment.client("ec2").describe_subnets(
        SubnetIds=group["VPCZoneIdentifier"].split(","))["Subnets"]}
    assert "us-east-1d" in zones


def test_preference_none_sends_the_preference_alone(account):
    group = {"name": "serve", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "spotPercent": 0,
             "capacity": {"reservations": {"preference": "none"}}}

    deployment = deploy(settings_for(minimal_config(groups=[group])), account)

    [planned] = deployment.of_type("aws:autoscaling/group:Group")
    assert planned.inputs["capacityReservationSpecification"] == {"capacityReservationPreference": "none"}
    assert not planned.inputs.get("availabilityZoneDistribution")


def held_block_facts(start: datetime.datetime, end: datetime.datetime) -> AccountFacts:
    return AccountFacts.model_validate({"capacityReservations": [{
        "id": BLOCK, "instanceType": "p5.48xlarge", "zone": "us-east-1a", "instanceCount": 2, "state": "active",
        "reservationType": "capacity-block", "start": start, "end": end, "upfrontUsd": 6000.0}]})


def test_a_started_block_gets_no_start_action_and_the_group_its_size(account):
    now = datetime.datetime.now(UTC).replace(microsecond=0)
    seed_account(account, held_block_facts(now - datetime.timedelta(hours=1), now + datetime.timedelta(days=3)))

    deployment = deploy(settings_for(minimal_config(groups=[block_group()])), account)

    autoscaling = deployment.client("autoscaling")
    [group] = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert (group["MinSize"], group["DesiredCapacity"]) == (2, 2)
    [action] = autoscaling.describe_scheduled_actions()["ScheduledUpdateGroupActions"]
    assert action["ScheduledActionName"].endswith("-block-end"), "the start action ran (and AWS deleted it): not declared again"


def test_a_block_whose_scale_in_time_has_passed_is_refused_before_any_resource(account):
    now = datetime.datetime.now(UTC)
    seed_account(account, held_block_facts(now - datetime.timedelta(days=1), now + datetime.timedelta(minutes=40)))

    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[block_group()])), account)

    assert "the group's scale-in, 45 minutes before the end" in problems(error)["gpu-cloud:groups[0].capacity.capacityBlock.reservationId"]
    assert account.client("kms").list_keys()["Keys"] == []
