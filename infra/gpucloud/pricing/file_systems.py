"""The project's FSx for Lustre file system in the estimate: its provisioned storage, all month.

FSx bills storage capacity per GB-month, prorated by the second, whether or not nodes run; on
PERSISTENT_2 the throughput tier is part of that price (FSx for Lustre pricing page,
https://aws.amazon.com/fsx/lustre/pricing/, read 2026-11-25). One provisioned GiB is billed as one
GB-month, as EBS volumes are here (on the expensive side). Data moved to and from S3 by the data
repository associations is not billed by FSx; S3 requests are, and are not estimated.
"""

from __future__ import annotations

from gpucloud.config import StackConfig

from .catalog import Catalog, PriceNotFound
from .lines import CostLine, UnpricedLine, flat


def lustre_month(catalog: Catalog, region: str, deployment_type: str, throughput_per_tib: int | None, gib: int) -> float:
    """USD per month for a file system of `gib`; raises PriceNotFound where the catalog has no row."""
    return gib * catalog.lustre(region, deployment_type, throughput_per_tib).usd_per_gb_month


def file_system_lines(config: StackConfig, region: str, catalog: Catalog) -> tuple[list[CostLine], list[UnpricedLine]]:
    """The `storage.lustre` line (min, desired and max alike), or why it is unpriced."""
    lustre = config.storage.lustre
    if lustre is None:
        return [], []
    tier = f", {lustre.throughput} MB/s/TiB" if lustre.throughput else ""
    resource = f"{config.project}/FSx for Lustre ({lustre.deployment_type}{tier})"
    quantity = flat(float(lustre.storage_capacity_gib))
    try:
        rate = catalog.lustre(region, lustre.deployment_type, lustre.throughput).usd_per_gb_month
    except PriceNotFound as missing:
        return [], [UnpricedLine(resource=resource, quantity=quantity, unit="GB-months", reason=str(missing))]
    return [CostLine(
        resource=resource, quantity=quantity, unit="GB-months",
        unit_price=flat(rate),
        monthly=flat(lustre.storage_capacity_gib * rate),
        note="provisioned storage all month, nodes running or not; throughput is in the price",
    )], []
