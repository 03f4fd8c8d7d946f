"""Every GPU type EC2 offers in a catalog region is priced there, or the catalog says why not.

"EC2" is moto's copy of DescribeInstanceTypes (the types with GpuInfo, fractional ones included)
and DescribeInstanceTypeOfferings (per region), the same answers the offline plan works from.
"""

from __future__ import annotations

import pytest

from gpucloud.pricing import SUPPORTED_INSTANCE_TYPES, SUPPORTED_REGIONS, estimate_stack, load_catalog
from gpucloud.pricing.catalog import AbsentInstance, InstancePrice, instance_family
from gpucloud.pricing.refresh import refresh_catalog


@pytest.fixture(scope="module")
def offered_gpu_types() -> dict[str, set[str]]:
    """Per catalog region, the instance types with GpuInfo that the region offers.

    moto answers DescribeInstanceTypes from one file for every region (its INSTANCE_TYPES) and
    DescribeInstanceTypeOfferings from one file per region (its INSTANCE_TYPE_OFFERINGS, region
    locations): both are read here as they are. Asking through boto3 only serialized them to XML
    and parsed them back, and made an EC2 client per region (1.6% of the suite's samples, py-spy,
    2026-11-27)."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES

    with_gpus = {name for name, described in INSTANCE_TYPES.items() if described.get("GpuInfo", {}).get("Gpus")}
    by_region = INSTANCE_TYPE_OFFERINGS["region"]
    return {
        region: with_gpus & {offering["InstanceType"] for offering in by_region.get(region, [])}
        for region in SUPPORTED_REGIONS
    }


def test_every_offered_gpu_type_is_priced_or_says_why_not(offered_gpu_types):
    catalog = load_catalog()

    missing = sorted(
        (region, instance_type)
        for region, types in offered_gpu_types.items()
        for instance_type in types
        if catalog.instance_row(instance_type, region) is None
    )

    assert not missing, f"GPU types EC2 offers that the catalog neither prices nor explains: {missing}"


def test_the_moto_list_is_not_empty_and_holds_the_new_families(offered_gpu_types):
    """A guard on the guard: the comparison above means something only if moto lists GPU types."""
    for instance_type in ("g6f.xlarge", "gr6f.4xlarge", "g7e.2xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge"):
        assert instance_type in offered_gpu_types["us-east-1"]
    # Every supported region offers some GPU type in moto too (each was added because the source
    # prices one there): an empty answer for a region would make the comparison above vacuous.
    assert [region for region, types in offered_gpu_types.items() if not types] == []


def test_a_type_ec2_offers_is_never_said_to_be_not_offered(offered_gpu_types):
    catalog = load_catalog()

    contradicted = [
        (row.instance_type, row.region)
        for row in catalog.absent_instances
        if row.reason.startswith("not offered") and row.instance_type in offered_gpu_types.get(row.region, ())
    ]

    assert not contradicted


def test_every_offered_gpu_type_is_one_refresh_asks_about(offered_gpu_types):
    """`gpucloud prices refresh` asks the Price List API about SUPPORTED_INSTANCE_TYPES by default."""
    assert set().union(*offered_gpu_types.values()) <= set(SUPPORTED_INSTANCE_TYPES)


@pytest.mark.parametrize("instance_type", ["g7e.2xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge", "p5en.48xlarge",
                                           "g6f.xlarge", "gr6f.4xlarge"])
def test_current_gpu_families_plan_priced(stack_config, instance_type):
    config = stack_config({"name": "gpus", "instanceTypes": [instance_type], "minSize": 1, "maxSize": 1, "spotPercent": 0})

    estimate = estimate_stack(config, "us-east-1")

    assert estimate.unpriced == []
    assert estimate.groups[0].on_demand.desired > 0


def test_new_rows_name_their_source_and_the_day_it_was_read():
    catalog = load_catalog()
    new_families = {"g5g", "g6f", "gr6", "gr6f", "g7", "g7e", "p3dn", "p6-b200", "p6-b300"}

    rows = [row for row in [*catalog.instances, *catalog.absent_instances]
            if instance_family(row.instance_type) in new_families]

    assert len(rows) == len({row.instance_type for row in rows}) * len(SUPPORTED_REGIONS)
    for row in rows:
        # The regions added 2026-11-27 (SUPPORTED_REGIONS[14:]) were read from the same commit two days later.
        read_on = "retrieved 2026-11-27" if row.region in SUPPORTED_REGIONS[14:] else "retrieved 2026-11-25"
        assert row.source.startswith("https://github.com/tsaol/aws-gpu/blob/") and read_on in row.source
        if isinstance(row, InstancePrice):
            assert f"pricing[{row.region}].onDemand" in row.source
        else:
            assert isinstance(row, AbsentInstance) and f"does not include {row.region}" in row.reason


def test_a_refresh_keeps_the_rows_it_does_not_ask_about(tmp_path):
    """Spot discounts and network prices are not in the Price List API's answer: a refresh keeps them."""
    path = tmp_path / "prices.json"
    previous = load_catalog()

    class NoPricing:
        def client(self, service_name, region_name=None):
            return None

    result = refresh_catalog(NoPricing(), path, regions=[], instance_types=[])

    assert result.catalog.network == previous.network and result.catalog.network
    assert result.catalog.spot_discounts == previous.spot_discounts
    assert sorted(load_catalog(path).instances, key=repr) == sorted(previous.instances, key=repr)
