import json
from collections import Counter

import pytest

from gpucloud.limits import LUSTRE_PERSISTENT_2_THROUGHPUTS
from gpucloud.pricing import SUPPORTED_INSTANCE_TYPES, SUPPORTED_REGIONS, PricingError, load_catalog
from gpucloud.pricing.catalog import DEFAULT_CATALOG_PATH


def test_every_row_names_its_source_and_date():
    catalog = load_catalog()

    for row in [*catalog.instances, *catalog.absent_instances, *catalog.storage, *catalog.kms, *catalog.spot_discounts,
                *catalog.network, *catalog.prometheus, *catalog.grafana, *catalog.load_balancers, *catalog.file_systems]:
        assert row.source.strip() and row.date.strip(), row


def test_every_supported_type_and_region_is_priced_or_says_why_not():
    catalog = load_catalog()
    priced = Counter((row.instance_type, row.region) for row in catalog.instances)
    absent = Counter((row.instance_type, row.region) for row in catalog.absent_instances)

    assert not [pair for pair, count in (priced + absent).items() if count > 1]
    for instance_type in SUPPORTED_INSTANCE_TYPES:
        for region in SUPPORTED_REGIONS:
            assert (instance_type, region) in priced or (instance_type, region) in absent, (instance_type, region)


def test_spot_discounts_are_fractions_below_one():
    for row in load_catalog().spot_discounts:
        assert 0 <= row.discount < 1


def test_ingestion_tiers_that_do_not_rise_are_refused(tmp_path):
    document = json.loads(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    document["prometheus"][0]["ingestionTiers"] = [{"upToSamples": 2_000_000_000, "usdPerTenMillionSamples": 0.9},
                                                   {"upToSamples": 1_000_000_000, "usdPerTenMillionSamples": 0.35}]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(PricingError, match="tiers must rise"):
        load_catalog(path)


@pytest.mark.parametrize("taken_on", ["2026", "2026-03", "2026 (year given by the page; no day)",
                                      "2025-06-03 (article date)", "2026-02-30"])
def test_a_row_dated_other_than_a_real_yyyy_mm_dd_day_is_refused(tmp_path, taken_on):
    document = json.loads(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    document["kms"][0]["date"] = taken_on
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(PricingError, match="YYYY-MM-DD|date"):
        load_catalog(path)


def test_spot_discounts_are_per_family_and_region_and_name_the_advisor_figures():
    rows = load_catalog().spot_discounts
    keys = Counter((row.family, row.region) for row in rows)

    assert not [key for key, count in keys.items() if count > 1]
    for row in rows:
        assert row.region in SUPPORTED_REGIONS
        assert "spot-advisor-data.json" in row.source and f"spot_advisor['{row.region}']['Linux']" in row.source
        # The discount is the lowest saving the row lists, so it can be checked against its own source text.
        lowest = int(row.source.split("the lowest, ")[1].split(" ")[0])
        assert row.discount == lowest / 100
        assert all(family_type.startswith(f"{row.family}.") for family_type in
                   [entry.split(" ")[0] for entry in row.source.split(" s for ")[1].split("; the lowest")[0].split(", ")])


GP3_GAPS = {
    # AWS's EBS pricing-page data file (2024-07-18, as copied in yeo/ec2.shop@576c890), the source of
    # every added region's gp3 row, has no "Asia Pacific (Malaysia)" entry (2026-11-27).
    "ap-southeast-5",
}
"""The supported regions without a gp3 row; ca-central-1's came from the same EBS file (2026-11-27)."""
ADDED_2026_11_27 = SUPPORTED_REGIONS[14:]
"""The regions added 2026-11-27: every other commercial region where tsaol/aws-gpu@77fcd9f prices a supported type."""
LOAD_BALANCER_GAPS = {
    # us-west-1: only a 2023 hourly figure and no LCU price; eu-north-1: no figure at all (2026-11-27).
    "us-west-1", "eu-north-1",
    # The fourteen regions added 2026-11-27: no dated ALB and LCU source was found for any of them.
    *ADDED_2026_11_27,
}
ALL_PERSISTENT_2 = {("PERSISTENT_2", throughput) for throughput in LUSTRE_PERSISTENT_2_THROUGHPUTS}
LUSTRE_GAPS = {
    # fsx.json (aws-price@508fb45, 2025-10-16) lists none of the four PERSISTENT_2 keys for these
    # regions (its "SSD new" suffix there marks the keys suffixed "SSD old" in the first fourteen).
    **{region: ALL_PERSISTENT_2 for region in (
        "af-south-1", "ap-northeast-3", "ap-south-2", "ap-southeast-3", "eu-central-2", "eu-south-1",
        "eu-south-2", "eu-west-3", "me-central-1", "me-south-1", "sa-east-1")},
    # Only the 125 and 250 keys are listed there; ap-southeast-5 has no SCRATCH_2 key either.
    "il-central-1": {("PERSISTENT_2", 500), ("PERSISTENT_2", 1000)},
    "ap-southeast-5": {("SCRATCH_2", None), ("PERSISTENT_2", 500), ("PERSISTENT_2", 1000)},
}
"""The Lustre tiers each supported region leaves unpriced; a region not named prices all five."""
LUSTRE_TIERS = [("SCRATCH_2", None)] + sorted(ALL_PERSISTENT_2)


def test_every_supported_region_prices_the_key_the_network_and_every_lustre_tier_but_the_listed_gaps():
    catalog = load_catalog()

    for region in SUPPORTED_REGIONS:
        assert catalog.kms_key(region).usd_per_key_month > 0
        network = catalog.network_prices(region)
        assert network.nat_gateway_usd_per_hour > 0 and network.interface_endpoint_usd_per_az_hour > 0
        for deployment_type, throughput in LUSTRE_TIERS:
            if (deployment_type, throughput) not in LUSTRE_GAPS.get(region, set()):
                assert catalog.lustre(region, deployment_type, throughput).usd_per_gb_month > 0


def test_persistent_2_costs_more_at_each_higher_throughput():
    catalog = load_catalog()

    for region in SUPPORTED_REGIONS:
        prices = [catalog.lustre(region, "PERSISTENT_2", tier).usd_per_gb_month for tier in LUSTRE_PERSISTENT_2_THROUGHPUTS
                  if ("PERSISTENT_2", tier) not in LUSTRE_GAPS.get(region, set())]
        assert prices == sorted(prices) and len(set(prices)) == len(prices), region


def test_every_region_with_gp3_prices_iops_and_throughput_above_the_baseline():
    catalog = load_catalog()

    for region in SUPPORTED_REGIONS:
        if region not in GP3_GAPS:
            row = catalog.gp3(region)
            assert row.usd_per_iops_month and row.usd_per_mibps_month, region


def test_the_regions_without_gp3_a_load_balancer_or_a_lustre_tier_are_exactly_the_listed_gaps():
    """A gap closed or opened changes these lists, with the reason: it never grows unnoticed."""
    catalog = load_catalog()

    assert {region for region in SUPPORTED_REGIONS if region not in {row.region for row in catalog.storage}} == GP3_GAPS
    assert {region for region in SUPPORTED_REGIONS
            if region not in {row.region for row in catalog.load_balancers}} == LOAD_BALANCER_GAPS
    priced = {(row.region, row.deployment_type, row.throughput_per_tib) for row in catalog.file_systems}
    missing = {region: {tier for tier in LUSTRE_TIERS if (region, *tier) not in priced} for region in SUPPORTED_REGIONS}
    assert {region: tiers for region, tiers in missing.items() if tiers} == LUSTRE_GAPS
    assert {row.region for row in catalog.file_systems} <= set(SUPPORTED_REGIONS)


def test_rows_read_from_aws_price_data_files_quote_the_figure_they_carry():
    """Rows taken from the aws-price copies of AWS's pricing-page data files name each file, the
    publication date and the price string of every figure, so a figure can be checked against its source."""
    catalog = load_catalog()
    copied = "https://github.com/lamngockhuong/aws-price/blob/"

    lustre = [row for row in catalog.file_systems if row.source.startswith(copied)]
    gaps = sum(len(tiers) for tiers in LUSTRE_GAPS.values())
    assert len(lustre) == len(SUPPORTED_REGIONS) * len(LUSTRE_TIERS) - gaps == len(catalog.file_systems)
    for row in lustre:
        assert "/lib/data/pricing/fsx.json" in row.source and "hawkFilePublicationDate 2025-10-16" in row.source
        assert f'price "{row.usd_per_gb_month:.10f}"' in row.source, row

    network = [row for row in catalog.network if row.source.startswith(copied)]
    # The ten regions added 2026-11-25 and the fourteen added 2026-11-27; the first four have other sources.
    assert {row.region for row in network} == set(SUPPORTED_REGIONS[4:])
    for row in network:
        assert "natgateway.json" in row.source and "vpc.json" in row.source
        for value in (row.nat_gateway_usd_per_hour, row.nat_usd_per_gb, row.interface_endpoint_usd_per_az_hour,
                      row.public_ipv4_usd_per_hour):
            assert f'price "{value:.10f}"' in row.source, (row.region, value)


def test_the_added_regions_rows_name_the_files_they_were_read_from():
    """Every row for a region added 2026-11-27 cites the commit its figure was read at, and the day it was read."""
    catalog = load_catalog()
    added = set(ADDED_2026_11_27)

    for row in [*catalog.instances, *catalog.absent_instances]:
        if row.region in added:
            assert row.source.startswith("https://github.com/tsaol/aws-gpu/blob/77fcd9fe1d0652fd07b830e5ed030d61da87923e/data")
            assert "retrieved 2026-11-27" in row.source, row
    for row in catalog.storage:
        if row.region in added:
            assert "yeo/ec2.shop/blob/576c890f33ae177837e93499866aa04a0ac4fa89/data/ebs/ebs.json" in row.source
            assert f'price "{row.usd_per_gb_month:.10f}"' in row.source and f'price "{row.usd_per_iops_month:.10f}"' in row.source
            assert f" = {row.usd_per_mibps_month} (a unit conversion only" in row.source
    assert {row.region for row in catalog.kms} == set(SUPPORTED_REGIONS)
    for row in [*catalog.network, *catalog.file_systems]:
        if row.region in added:
            assert "aws-price/blob/508fb45296c89efe38772babd7ec766644629267" in row.source and "retrieved 2026-11-27" in row.source


@pytest.mark.parametrize("table", ["fileSystems", "network", "storage", "loadBalancers"])
def test_a_second_row_for_the_same_key_is_refused(tmp_path, table):
    document = json.loads(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    document[table].append(dict(document[table][0], source="a second source", date="2026-11-27"))
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(PricingError, match=f"{table} has more than one row for region {document[table][0]['region']}"):
        load_catalog(path)


def test_an_unchanged_catalog_is_read_once_and_an_edited_one_again(tmp_path):
    path = tmp_path / "prices.json"
    document = json.loads(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    path.write_text(json.dumps(document), encoding="utf-8")
    first = load_catalog(path)

    assert load_catalog(path) is first
    assert load_catalog() is load_catalog()

    document["description"] = "edited by a test"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert load_catalog(path).description == "edited by a test"

    path.write_text("{", encoding="utf-8")
    with pytest.raises(PricingError, match="is not valid JSON"):
        load_catalog(path)
    path.unlink()
    with pytest.raises(PricingError, match="does not exist"):
        load_catalog(path)
