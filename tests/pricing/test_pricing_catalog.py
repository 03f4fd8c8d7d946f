from collections import Counter

from gpucloud.pricing import SUPPORTED_INSTANCE_TYPES, SUPPORTED_REGIONS, load_catalog


def test_every_row_names_its_source_and_date():
    catalog = load_catalog()

    for row in [*catalog.instances, *catalog.absent_instances, *catalog.storage, *catalog.kms, *catalog.spot_discounts]:
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
