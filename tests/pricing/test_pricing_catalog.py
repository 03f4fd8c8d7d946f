import json
from collections import Counter

import pytest

from gpucloud.pricing import SUPPORTED_INSTANCE_TYPES, SUPPORTED_REGIONS, PricingError, load_catalog
from gpucloud.pricing.catalog import DEFAULT_CATALOG_PATH


def test_every_row_names_its_source_and_date():
    catalog = load_catalog()

    for row in [*catalog.instances, *catalog.absent_instances, *catalog.storage, *catalog.kms, *catalog.spot_discounts,
                *catalog.network, *catalog.prometheus, *catalog.grafana]:
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
