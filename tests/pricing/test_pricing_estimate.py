import pytest

from gpucloud.pricing import (
    SUPPORTED_REGIONS, PriceNotFound, budget_findings, estimate_stack, load_catalog, unpriced_finding,
)
from gpucloud.pricing.estimate import gp3_volume_month, purchase_split

from support import assert_cents

HOURS = 730


def test_json_document_has_exactly_the_documented_keys(stack_config):
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 1})

    document = estimate_stack(config, "us-east-1").to_dict()

    assert list(document) == ["currency", "hoursPerMonth", "monthly", "groups", "lines", "unpriced"]
    assert document["currency"] == "USD" and document["hoursPerMonth"] == 730
    assert document["unpriced"] == []
    assert set(document["monthly"]) == {"min", "desired", "max"}
    assert {"monthly", "onDemand", "spot"} <= set(document["groups"][0])
    assert {"resource", "quantity", "unit", "monthly"} <= set(document["lines"][0])


def test_always_on_group_costs_every_hour_of_the_month_at_its_first_type(stack_config, rows):
    config = stack_config({
        "name": "serve", "instanceTypes": ["g5.xlarge", "g5.2xlarge"], "minSize": 2, "maxSize": 2,
        "spotPercent": 0, "rootVolumeGiB": 100, "dataVolumeGiB": 50,
    })

    estimate = estimate_stack(config, "us-east-1")

    compute_first = 2 * HOURS * rows.hourly("g5.xlarge", "us-east-1")
    compute_max = 2 * HOURS * rows.hourly("g5.2xlarge", "us-east-1")  # the most expensive listed type
    volumes = 2 * (100 + 50) * rows.gp3_per_gb_month("us-east-1")
    key = rows.kms_key_month("us-east-1")
    group = estimate.groups[0]
    assert_cents(group.on_demand.desired, compute_first)
    assert_cents(group.spot.desired, 0)
    assert_cents(estimate.monthly.min, compute_first + volumes + key)
    assert_cents(estimate.monthly.desired, compute_first + volumes + key)
    assert_cents(estimate.monthly.max, compute_max + volumes + key)
    assert group.instance_type == "g5.xlarge" and group.max_instance_type == "g5.2xlarge"
    assert any("first listed type" in note for note in group.notes)
    for scenario in ("min", "desired", "max"):
        assert_cents(sum(line.monthly.get(scenario) for line in estimate.lines), estimate.monthly.get(scenario))


def test_spot_split_prices_instances_above_the_base_at_the_family_discount(stack_config, rows):
    config = stack_config({
        "name": "train", "instanceTypes": ["g5.2xlarge"], "minSize": 1, "desiredCapacity": 4, "maxSize": 6,
        "onDemandBaseCapacity": 1, "spotPercent": 75, "rootVolumeGiB": 200,
    }, region="us-west-2")

    estimate = estimate_stack(config, "us-west-2")

    hourly = rows.hourly("g5.2xlarge", "us-west-2")
    spot_hourly = hourly * (1 - rows.spot_discount("g5", "us-west-2"))
    gb_month = rows.gp3_per_gb_month("us-west-2")
    # Worked by hand: base 1 on demand; of the rest 25% on demand, rounded up.
    # min 1 -> 1 OD + 0 spot; desired 4 -> 1 + ceil(0.75) = 2 OD + 2 spot; max 6 -> 1 + ceil(1.25) = 3 OD + 3 spot.
    expected = {"min": (1, 0), "desired": (2, 2), "max": (3, 3)}
    group = estimate.groups[0]
    for scenario, (on_demand, spot) in expected.items():
        assert_cents(group.on_demand.get(scenario), on_demand * HOURS * hourly)
        assert_cents(group.spot.get(scenario), spot * HOURS * spot_hourly)
        volumes = (on_demand + spot) * 200 * gb_month
        assert_cents(group.monthly.get(scenario), on_demand * HOURS * hourly + spot * HOURS * spot_hourly + volumes)
        assert_cents(estimate.monthly.get(scenario), group.monthly.get(scenario) + rows.kms_key_month("us-west-2"))


def test_group_scaled_to_zero_twelve_hours_a_day_costs_half(stack_config, rows):
    always_on = {"name": "dev", "instanceTypes": ["p3.2xlarge"], "minSize": 0, "desiredCapacity": 1, "maxSize": 1,
                 "spotPercent": 0}
    nightly = dict(always_on, scaling={"schedules": [
        {"name": "evening", "recurrence": "0 20 * * *", "desiredCapacity": 0, "timeZone": "America/New_York"},
        {"name": "morning", "recurrence": "0 8 * * *", "desiredCapacity": 1, "timeZone": "America/New_York"},
    ]})

    estimate = estimate_stack(stack_config(nightly), "us-east-1")

    running_month = HOURS * rows.hourly("p3.2xlarge", "us-east-1") + 100 * rows.gp3_per_gb_month("us-east-1")
    group = estimate.groups[0]
    assert_cents(group.monthly.desired, running_month / 2)
    assert_cents(group.instance_hours.desired, HOURS / 2)
    unscheduled = estimate_stack(stack_config(always_on), "us-east-1").groups[0]
    assert_cents(group.monthly.desired, unscheduled.monthly.desired / 2)


def test_schedule_firing_mid_hour_is_counted_to_the_minute(stack_config, rows):
    group = {"name": "lab", "instanceTypes": ["g4dn.xlarge"], "maxSize": 3, "spotPercent": 0, "rootVolumeGiB": 30,
             "scaling": {"schedules": [
                 {"name": "start", "recurrence": "15 9 * * MON-FRI", "desiredCapacity": 3, "timeZone": "Europe/Paris"},
                 {"name": "stop", "recurrence": "45 17 * * 1-5", "desiredCapacity": 0, "timeZone": "Europe/Paris"},
             ]}}

    estimate = estimate_stack(stack_config(group), "us-east-1")

    # 3 instances for 8.5 h on each of 5 weekdays, out of a 168-hour week.
    fraction = 5 * 8.5 / 168
    instance_hours = 3 * fraction * HOURS
    expected = instance_hours * rows.hourly("g4dn.xlarge", "us-east-1") + instance_hours * 30 * rows.gp3_per_gb_month(
        "us-east-1") / HOURS
    assert_cents(estimate.groups[0].instance_hours.desired, instance_hours)
    assert_cents(estimate.groups[0].monthly.desired, expected)


def test_scheduled_group_is_priced_at_its_bounds_for_min_and_max_not_at_the_scheduled_desired(stack_config, rows):
    """Schedules that set only desiredCapacity leave minSize 0 and maxSize 1 in force all week."""
    config = stack_config({
        "name": "dev", "instanceTypes": ["p3.2xlarge"], "minSize": 0, "desiredCapacity": 1, "maxSize": 1,
        "spotPercent": 0, "scaling": {"schedules": [
            {"name": "evening", "recurrence": "0 20 * * *", "desiredCapacity": 0, "timeZone": "America/New_York"},
            {"name": "morning", "recurrence": "0 8 * * *", "desiredCapacity": 1, "timeZone": "America/New_York"},
        ]}})

    group = estimate_stack(config, "us-east-1").groups[0]

    assert_cents(group.instance_hours.min, 0)
    assert_cents(group.monthly.min, 0)
    assert_cents(group.instance_hours.max, HOURS)
    assert_cents(group.monthly.max, HOURS * rows.hourly("p3.2xlarge", "us-east-1") + 100 * rows.gp3_per_gb_month(
        "us-east-1"))


def test_schedule_that_raises_max_by_day_prices_max_at_the_scheduled_max_size(stack_config, rows):
    config = stack_config({
        "name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "desiredCapacity": 0, "maxSize": 4,
        "spotPercent": 0, "rootVolumeGiB": 50, "scaling": {"schedules": [
            {"name": "day", "recurrence": "0 8 * * *", "minSize": 1, "maxSize": 4, "desiredCapacity": 2},
            {"name": "night", "recurrence": "0 20 * * *", "minSize": 0, "maxSize": 0, "desiredCapacity": 0},
        ]}})

    group = estimate_stack(config, "us-east-1").groups[0]

    # 12 hours a day: minSize 1, desired 2, maxSize 4; nothing at night.
    hourly = rows.hourly("g5.xlarge", "us-east-1")
    for scenario, capacity in {"min": 1, "desired": 2, "max": 4}.items():
        assert_cents(group.instance_hours.get(scenario), capacity * HOURS / 2)
        assert_cents(group.on_demand.get(scenario), capacity * HOURS / 2 * hourly)


def test_schedule_that_only_lowers_max_at_night_returns_to_the_scenario_capacity(stack_config, rows):
    group = {"name": "batch", "instanceTypes": ["g6.xlarge"], "minSize": 1, "desiredCapacity": 2, "maxSize": 4,
             "spotPercent": 0, "rootVolumeGiB": 30, "scaling": {"schedules": [
                 {"name": "night", "recurrence": "0 0 * * *", "minSize": 0, "maxSize": 0},
                 {"name": "day", "recurrence": "0 12 * * *", "minSize": 1, "maxSize": 4},
             ]}}

    estimate = estimate_stack(stack_config(group), "us-east-1")

    hourly = rows.hourly("g6.xlarge", "us-east-1")
    for scenario, capacity in {"min": 1, "desired": 2, "max": 4}.items():
        assert_cents(estimate.groups[0].on_demand.get(scenario), capacity * HOURS / 2 * hourly)


def test_persistent_volume_is_billed_all_month_even_with_no_instance(stack_config, rows):
    config = stack_config({
        "name": "notebook", "instanceTypes": ["g6.xlarge"], "minSize": 0, "maxSize": 1, "spotPercent": 0,
        "rootVolumeGiB": 100, "persistentVolumeGiB": 500,
    })

    estimate = estimate_stack(config, "us-east-1")

    gb_month = rows.gp3_per_gb_month("us-east-1")
    key = rows.kms_key_month("us-east-1")
    persistent = 500 * gb_month
    assert_cents(estimate.monthly.min, persistent + key)
    assert_cents(estimate.monthly.desired, persistent + key)
    assert_cents(estimate.monthly.max, HOURS * rows.hourly("g6.xlarge", "us-east-1") + 100 * gb_month + persistent + key)
    persistent_lines = [line for line in estimate.lines if "persistent volume" in line.resource]
    assert len(persistent_lines) == 1 and persistent_lines[0].quantity.min == 500


def test_spot_in_a_region_without_a_sourced_discount_is_priced_at_on_demand_and_says_so(stack_config, rows):
    config = stack_config({"name": "infer", "instanceTypes": ["g4dn.2xlarge"], "minSize": 2, "maxSize": 2},
                          region="eu-west-1")

    group = estimate_stack(config, "eu-west-1").groups[0]

    assert_cents(group.spot.desired, 2 * HOURS * rows.hourly("g4dn.2xlarge", "eu-west-1"))
    assert any("no sourced spot discount for g4dn in eu-west-1" in note for note in group.notes)


def test_spot_discount_is_the_one_of_the_groups_region(stack_config, rows):
    group = {"name": "infer", "instanceTypes": ["g6e.2xlarge"], "minSize": 1, "maxSize": 1, "spotPercent": 100}

    for region in ("us-east-1", "us-west-2"):
        estimate = estimate_stack(stack_config(group, region=region), region)

        expected = HOURS * rows.hourly("g6e.2xlarge", region) * (1 - rows.spot_discount("g6e", region))
        assert_cents(estimate.groups[0].spot.desired, expected)


def test_type_not_offered_in_the_region_is_listed_unpriced_with_the_catalogs_reason(stack_config, rows):
    config = stack_config({"name": "train", "instanceTypes": ["p5e.48xlarge"], "minSize": 1, "maxSize": 2,
                           "spotPercent": 0})

    estimate = estimate_stack(config, "us-east-1")

    [line] = estimate.unpriced
    assert line.resource == "train/instances (p5e.48xlarge)" and line.unit == "instance-hours"
    assert (line.quantity.min, line.quantity.desired, line.quantity.max) == (HOURS, HOURS, 2 * HOURS)
    assert "p5e.48xlarge in us-east-1" in line.reason and "no on-demand price published" in line.reason
    assert not estimate.complete and estimate.partial_in("min")
    # Instances count nothing; the root volumes and the key are still priced.
    assert_cents(estimate.groups[0].on_demand.desired, 0)
    assert_cents(estimate.monthly.min, 100 * rows.gp3_per_gb_month("us-east-1") + rows.kms_key_month("us-east-1"))
    assert_cents(estimate.monthly.max, 2 * 100 * rows.gp3_per_gb_month("us-east-1") + rows.kms_key_month("us-east-1"))


def test_region_outside_the_catalog_leaves_every_line_unpriced_and_names_each(stack_config):
    # ca-west-1: a commercial region the catalog does not cover (its instance source prices no supported type there).
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 1,
                           "persistentVolumeGiB": 50}, region="ca-west-1")

    estimate = estimate_stack(config, "ca-west-1")

    assert [line.resource for line in estimate.unpriced] == [
        "train/instances (g5.xlarge)", "train/root volume (gp3, 100 GiB per instance)",
        "train/persistent volume (gp3, 50 GiB)", "vision/kms key (customer managed)",
    ]
    assert estimate.monthly.desired == 0
    assert all("ca-west-1" in line.reason for line in estimate.unpriced)


def test_listed_type_without_a_price_leaves_max_priced_at_the_dearest_priced_type_as_a_lower_bound(stack_config, rows):
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge", "p5e.48xlarge"], "minSize": 1,
                           "maxSize": 2, "spotPercent": 0})

    estimate = estimate_stack(config, "us-east-1")

    hourly = rows.hourly("g5.xlarge", "us-east-1")
    group = estimate.groups[0]
    assert_cents(group.on_demand.desired, HOURS * hourly)
    assert_cents(group.on_demand.max, 2 * HOURS * hourly)
    [line] = estimate.unpriced
    assert (line.quantity.min, line.quantity.desired, line.quantity.max) == (0, 0, 2 * HOURS)
    assert "max is priced at g5.xlarge meanwhile" in line.reason
    assert not estimate.partial_in("desired") and estimate.partial_in("max")


def test_first_type_without_a_price_leaves_min_and_desired_instances_unpriced(stack_config, rows):
    config = stack_config({"name": "train", "instanceTypes": ["p5e.48xlarge", "p5.48xlarge"], "minSize": 1,
                           "maxSize": 1, "spotPercent": 0})

    estimate = estimate_stack(config, "us-east-1")

    group = estimate.groups[0]
    assert_cents(group.on_demand.min, 0)
    assert_cents(group.on_demand.max, HOURS * rows.hourly("p5.48xlarge", "us-east-1"))
    [line] = estimate.unpriced
    assert (line.quantity.min, line.quantity.desired, line.quantity.max) == (HOURS, HOURS, HOURS)


def test_missing_gp3_row_leaves_the_volumes_unpriced_and_the_budget_checked_on_the_rest(stack_config, rows):
    packaged = load_catalog()
    catalog = packaged.model_copy(update={"storage": [row for row in packaged.storage if row.region != "us-east-1"]})
    config = stack_config({"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 1,
                           "spotPercent": 0, "rootVolumeGiB": 100, "persistentVolumeGiB": 200})

    estimate = estimate_stack(config, "us-east-1", catalog)

    priced = HOURS * rows.hourly("g5.xlarge", "us-east-1") + rows.kms_key_month("us-east-1")
    assert_cents(estimate.monthly.min, priced)
    assert [(line.resource, line.quantity.min) for line in estimate.unpriced] == [
        ("serve/root volume (gp3, 100 GiB per instance)", 100), ("serve/persistent volume (gp3, 200 GiB)", 200),
    ]
    warning = unpriced_finding(estimate)
    assert warning.severity == "warning" and warning.rule == "partial-cost-estimate"
    assert warning.message.count("no gp3 storage price for us-east-1") == 1
    assert "serve/root volume" in warning.message and "serve/persistent volume" in warning.message
    assert "real monthly cost is higher" in warning.message and "gpucloud prices refresh" in warning.message
    [failure] = budget_findings(estimate, priced - 1)
    assert failure.severity == "failure" and f"costs at least ${priced:,.2f}" in failure.message


def test_complete_estimate_has_no_unpriced_finding(stack_config):
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 1})

    assert unpriced_finding(estimate_stack(config, "us-east-1")) is None


def test_iops_above_the_baseline_without_a_sourced_iops_price_is_not_guessed():
    price = load_catalog().gp3("us-east-1").model_copy(update={"usd_per_iops_month": None})

    with pytest.raises(PriceNotFound, match="no gp3 IOPS price for us-east-1"):
        gp3_volume_month(price, 100, iops=4000)
    assert gp3_volume_month(price, 100) == 100 * price.usd_per_gb_month


def test_gp3_iops_and_throughput_above_the_free_baseline_are_charged(rows):
    price = load_catalog().gp3("ap-northeast-1")

    monthly = gp3_volume_month(price, 1000, iops=6000, throughput_mibps=250)

    row = rows.gp3("ap-northeast-1")
    assert (row["baselineIops"], row["baselineMibps"]) == (3000, 125)
    assert_cents(monthly, 1000 * row["usdPerGbMonth"] + 3000 * row["usdPerIopsMonth"] + 125 * row["usdPerMibpsMonth"])
    assert_cents(gp3_volume_month(price, 1000), 1000 * rows.gp3_per_gb_month("ap-northeast-1"))


def test_iops_and_throughput_below_the_free_baseline_cost_nothing_extra():
    price = load_catalog().gp3("us-east-1")

    assert gp3_volume_month(price, 100, iops=2000, throughput_mibps=100) == 100 * price.usd_per_gb_month


def test_any_fraction_of_an_on_demand_instance_rounds_up_to_a_whole_one():
    assert purchase_split(1, on_demand_base=0, spot_percent=99) == (1, 0)
    assert purchase_split(3, on_demand_base=0, spot_percent=50) == (2, 1)
    assert purchase_split(4, on_demand_base=1, spot_percent=100) == (1, 3)


def test_stack_key_is_one_key_month_in_every_scenario(stack_config, rows):
    estimate = estimate_stack(stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 1}), "us-east-1")

    [key] = [line for line in estimate.lines if line.unit == "key-months"]
    assert (key.quantity.min, key.quantity.desired, key.quantity.max) == (1, 1, 1)
    assert (key.monthly.min, key.monthly.desired, key.monthly.max) == (rows.kms_key_month("us-east-1"),) * 3


def test_unpriced_key_makes_every_scenario_a_lower_bound(stack_config):
    packaged = load_catalog()
    catalog = packaged.model_copy(update={"kms": [row for row in packaged.kms if row.region != "us-east-1"]})
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 1})

    estimate = estimate_stack(config, "us-east-1", catalog)

    [key] = estimate.unpriced
    assert key.unit == "key-months" and (key.quantity.min, key.quantity.desired, key.quantity.max) == (1, 1, 1)
    assert all(estimate.partial_in(scenario) for scenario in ("min", "desired", "max"))


def test_gpu_share_is_instance_time_over_the_monthly_total(stack_config, rows):
    config = stack_config({"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 1,
                           "spotPercent": 0, "rootVolumeGiB": 100})

    share = estimate_stack(config, "us-east-1").gpu_compute_share

    compute = HOURS * rows.hourly("g5.xlarge", "us-east-1")
    total = compute + 100 * rows.gp3_per_gb_month("us-east-1") + rows.kms_key_month("us-east-1")
    for scenario in ("min", "desired", "max"):
        assert share.get(scenario) == pytest.approx(compute / total)


def test_gpu_share_of_a_stack_with_no_priced_cost_is_zero(stack_config):
    config = stack_config({"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 1}, region="ca-west-1")

    share = estimate_stack(config, "ca-west-1").gpu_compute_share

    assert (share.min, share.desired, share.max) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(("network", "nat_gateways", "endpoint_zones"), [
    ({}, 1, 0),
    ({"zones": 3, "natGateways": "perZone"}, 3, 0),
    ({"zones": 2, "interfaceEndpoints": ["logs", "monitoring", "autoscaling"]}, 1, 6),
    ({"zones": 2, "egress": "endpointsOnly", "interfaceEndpoints": [
        "ec2", "monitoring", "autoscaling", "ssm", "ssmmessages", "ec2messages", "logs"]}, 0, 14),
])
def test_a_created_network_adds_its_nat_and_endpoint_hours_all_month(stack_config, rows, network, nat_gateways, endpoint_zones):
    group = {"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1}
    for region in SUPPORTED_REGIONS:
        created = estimate_stack(stack_config(group, region=region, network=network), region)
        listed = estimate_stack(stack_config(group, region=region), region)
        prices = rows.network(region)
        expected = HOURS * (nat_gateways * (prices["natGatewayUsdPerHour"] + prices["publicIpv4UsdPerHour"])
                            + endpoint_zones * prices["interfaceEndpointUsdPerAzHour"])
        for scenario in ("min", "desired", "max"):
            assert_cents(created.monthly.get(scenario) - listed.monthly.get(scenario), expected)
        notes = [line.note for line in created.lines if "NAT gateways" in line.resource or "interface endpoints" in line.resource]
        assert notes and all("per GB on top (not included)" in note for note in notes)


def test_a_region_without_network_prices_lists_the_network_unpriced(stack_config):
    # Every supported region has a network row now, so the row is taken out of a copy of the catalog.
    packaged = load_catalog()
    catalog = packaged.model_copy(update={"network": [row for row in packaged.network if row.region != "eu-central-1"]})
    group = {"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1}
    estimate = estimate_stack(stack_config(group, region="eu-central-1", network={}), "eu-central-1", catalog)
    unpriced = {line.resource: line.reason for line in estimate.unpriced}
    assert "no NAT gateway or VPC endpoint price for eu-central-1" in unpriced["vision/NAT gateways (single)"]
    assert "vision/NAT public IPv4 addresses" in unpriced


def test_notes_name_the_max_type_only_for_several_types_and_the_spot_gap_only_for_spot_groups(stack_config):
    single = estimate_stack(stack_config({"name": "serve", "instanceTypes": ["g4dn.2xlarge"], "minSize": 1, "maxSize": 2,
                                          "spotPercent": 0}, region="eu-west-1"), "eu-west-1").groups[0]
    assert single.notes == ["min and desired priced at g4dn.2xlarge (first listed type)"]


def test_spot_group_scaled_to_zero_twelve_hours_a_day_pays_half_its_spot_hours(stack_config, rows):
    group = {"name": "dev", "instanceTypes": ["g5.xlarge"], "minSize": 0, "desiredCapacity": 2, "maxSize": 2,
             "spotPercent": 100, "scaling": {"schedules": [
                 {"name": "evening", "recurrence": "0 20 * * *", "desiredCapacity": 0, "timeZone": "UTC"},
                 {"name": "morning", "recurrence": "0 8 * * *", "desiredCapacity": 2, "timeZone": "UTC"},
             ]}}

    estimate = estimate_stack(stack_config(group), "us-east-1")

    spot_hourly = rows.hourly("g5.xlarge", "us-east-1") * (1 - rows.spot_discount("g5", "us-east-1"))
    assert_cents(estimate.groups[0].spot.desired, 2 * HOURS / 2 * spot_hourly)
    assert_cents(estimate.groups[0].on_demand.desired, 0)
