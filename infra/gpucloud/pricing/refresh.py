"""Rebuild the price catalog from the AWS Price List API (`gpucloud prices refresh`).

Queries the `pricing` endpoint in us-east-1 with `get_products`, page by page, and reads each
PriceList item (a JSON string) at terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD:

- instances: ServiceCode AmazonEC2, filters instanceType, location, operatingSystem=Linux,
  tenancy=Shared, preInstalledSw=NA, capacitystatus=Used;
- gp3: ServiceCode AmazonEC2, filters volumeApiName=gp3, location (storage, IOPS and
  throughput products are told apart by their usagetype; throughput comes per GiBps-month and
  is stored per MiBps-month);
- KMS: ServiceCode awskms, filter location (the product whose usagetype ends in KMS-Keys).

The Price List API has no spot prices: spot discounts are carried over from the current
catalog, and so are the NAT gateway and endpoint prices and the Amazon Managed Service for
Prometheus and Amazon Managed Grafana prices, which the refresh does not query. Rows
outside the refreshed regions and types are kept as they were. A price the API does not return
(an empty or incomplete answer) never deletes the row the catalog has: the old row is kept with
its own source and date, and the refresh says so.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from .catalog import (
    DEFAULT_CATALOG_PATH,
    AbsentInstance,
    Catalog,
    InstancePrice,
    KmsPrice,
    PricingError,
    StoragePrice,
    load_catalog,
)

PRICING_API_REGION = "us-east-1"

# The Price List API names regions by their "location" attribute, not by region code.
REGION_LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
    "ca-central-1": "Canada (Central)",
    "eu-west-1": "EU (Ireland)",
    "eu-west-2": "EU (London)",
    "eu-central-1": "EU (Frankfurt)",
    "eu-north-1": "EU (Stockholm)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-northeast-2": "Asia Pacific (Seoul)",
    "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
    "ap-south-1": "Asia Pacific (Mumbai)",
    # Added 2026-11-27. Each name is the one AWS's own location list gives the region code
    # (https://b0.p.awsstatic.com/locations/1.0/aws/current/locations.json, as copied in
    # github.com/lamngockhuong/aws-price@508fb45296c89efe38772babd7ec766644629267 lib/data/locations.json:
    # {"name": ..., "code": ..., "type": "AWS Region"}), which gives the fourteen names above for their
    # codes exactly; AWS's pricing-page data files key their regions by the same names (ebs.json as
    # copied in yeo/ec2.shop@576c890, 2024-07-18; natgateway.json, vpc.json and fsx.json in that
    # aws-price commit, 2025-10/11), and the catalog's rows for these regions were read under them.
    # Not checked against a Price List API answer for these fourteen: the API's `location` is taken
    # to be the pricing pages' name, as it is for the regions above. Least certain: "EU (Milan)",
    # "EU (Spain)" and "EU (Zurich)" (some third-party tables write "Europe (...)"), "Asia Pacific
    # (Osaka)" (earlier lists had "Asia Pacific (Osaka-Local)"), "Asia Pacific (Malaysia)" and
    # "Middle East (UAE)". A wrong name makes the API answer nothing for that region: the refresh then
    # keeps the catalog's prices there and lists each one it kept (see refresh_catalog).
    "af-south-1": "Africa (Cape Town)",
    "ap-east-1": "Asia Pacific (Hong Kong)",
    "ap-northeast-3": "Asia Pacific (Osaka)",
    "ap-south-2": "Asia Pacific (Hyderabad)",
    "ap-southeast-3": "Asia Pacific (Jakarta)",
    "ap-southeast-5": "Asia Pacific (Malaysia)",
    "eu-central-2": "EU (Zurich)",
    "eu-south-1": "EU (Milan)",
    "eu-south-2": "EU (Spain)",
    "eu-west-3": "EU (Paris)",
    "il-central-1": "Israel (Tel Aviv)",
    "me-central-1": "Middle East (UAE)",
    "me-south-1": "Middle East (Bahrain)",
    "sa-east-1": "South America (Sao Paulo)",
}

INSTANCE_FILTERS = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}


def _term_filters(filters: dict[str, str]) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in filters.items()]


def get_products(client: Any, service_code: str, filters: dict[str, str]) -> Iterator[dict]:
    """Every product matching the filters, following NextToken, each PriceList item parsed."""
    paginator = client.get_paginator("get_products")
    pages = paginator.paginate(ServiceCode=service_code, Filters=_term_filters(filters), FormatVersion="aws_v1")
    for page in pages:
        for item in page.get("PriceList", []):
            yield json.loads(item) if isinstance(item, str) else item


def on_demand_prices(product: dict) -> Iterator[tuple[float, str, dict]]:
    """(USD price, unit, term) for each on-demand price dimension of a product."""
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is not None:
                yield float(usd), dimension.get("unit", ""), term


def _describe(service_code: str, filters: dict[str, str], product: dict, term: dict) -> str:
    shown = ", ".join(f"{field}={value}" for field, value in filters.items())
    return (
        f"AWS Price List API get_products ServiceCode={service_code} Filters [{shown}]; "
        f"sku {product.get('product', {}).get('sku', '?')}, effectiveDate {term.get('effectiveDate', '?')}"
    )


def _location(region: str) -> str:
    try:
        return REGION_LOCATIONS[region]
    except KeyError:
        raise PricingError(
            f"no Price List location name is known for region {region!r}; add it to REGION_LOCATIONS"
        ) from None


def fetch_instance_price(client: Any, instance_type: str, region: str, today: str) -> InstancePrice | AbsentInstance:
    filters = {"instanceType": instance_type, "location": _location(region), **INSTANCE_FILTERS}
    found: list[tuple[float, dict, dict]] = []
    for product in get_products(client, "AmazonEC2", filters):
        attributes = product.get("product", {}).get("attributes", {})
        # Capacity Block offers share these filters; only plain on-demand box usage is the hourly price.
        if attributes.get("marketoption", "OnDemand") != "OnDemand" or "BoxUsage" not in attributes.get("usagetype", ""):
            continue
        for usd, unit, term in on_demand_prices(product):
            if unit == "Hrs" and usd > 0:
                found.append((usd, product, term))
    if not found:
        return AbsentInstance(
            instance_type=instance_type,
            region=region,
            reason=f"the Price List API returned no on-demand Linux price for {instance_type} in {filters['location']}",
            source=_describe("AmazonEC2", filters, {}, {}),
            date=today,
        )
    distinct = {usd for usd, _product, _term in found}
    if len(distinct) > 1:
        skus = sorted(product.get("product", {}).get("sku", "?") for _usd, product, _term in found)
        raise PricingError(
            f"the Price List API returned {len(distinct)} different hourly prices for {instance_type} in "
            f"{filters['location']} (skus {', '.join(skus)}); refusing to guess which applies"
        )
    usd, product, term = found[0]
    return InstancePrice(
        instance_type=instance_type, region=region, usd_per_hour=usd,
        source=_describe("AmazonEC2", filters, product, term), date=today,
    )


def fetch_gp3_price(client: Any, region: str, today: str) -> StoragePrice | None:
    filters = {"volumeApiName": "gp3", "location": _location(region)}
    storage = iops = throughput = None
    described = []
    for product in get_products(client, "AmazonEC2", filters):
        usage_type = product.get("product", {}).get("attributes", {}).get("usagetype", "")
        for usd, unit, term in on_demand_prices(product):
            if usage_type.endswith("EBS:VolumeUsage.gp3"):
                storage = usd
            elif usage_type.endswith("EBS:VolumeP-IOPS.gp3"):
                iops = usd
            elif usage_type.endswith("EBS:VolumeP-Throughput.gp3"):
                # AWS advertises gp3 throughput per MB/s but the Price List quotes it per GiBps-month.
                throughput = usd / 1024 if unit.lower().startswith("gibps") else usd
            else:
                continue
            described.append(f"{usage_type} sku {product.get('product', {}).get('sku', '?')} {usd} {unit}")
    if storage is None or iops is None or throughput is None:
        return None
    shown = ", ".join(f"{field}={value}" for field, value in filters.items())
    return StoragePrice(
        region=region, usd_per_gb_month=storage, usd_per_iops_month=iops, usd_per_mibps_month=throughput,
        source=f"AWS Price List API get_products ServiceCode=AmazonEC2 Filters [{shown}]: " + "; ".join(described),
        date=today,
    )


def fetch_kms_price(client: Any, region: str, today: str) -> KmsPrice | None:
    filters = {"location": _location(region)}
    for product in get_products(client, "awskms", filters):
        usage_type = product.get("product", {}).get("attributes", {}).get("usagetype", "")
        if not usage_type.endswith("KMS-Keys"):
            continue
        for usd, _unit, term in on_demand_prices(product):
            if usd > 0:
                return KmsPrice(
                    region=region, usd_per_key_month=usd,
                    source=_describe("awskms", filters, product, term) + f", usagetype {usage_type}", date=today,
                )
    return None


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass
class RefreshResult:
    """The catalog written, and every price the API did not return (kept from before, or still missing)."""

    catalog: Catalog
    kept: list[str] = field(default_factory=list)


def _was(row: Any) -> str:
    return f"(source: {row.source}; date {row.date})"


def _fresh_or_previous(
    fresh: Any, old: Any, rows: list, kept: list[str], *, what: str, missing: str, without: str = ""
) -> None:
    """Keep the fresh row; failing that the previous one, and say so; failing both, say what stays unpriced."""
    if fresh is not None:
        rows.append(fresh)
    elif old is not None:
        rows.append(old)
        kept.append(f"kept the previous {what} {_was(old)}: the Price List API returned {missing}")
    else:
        kept.append(f"no {what}: the Price List API returned {missing} and the catalog had none{without}")


def refresh_catalog(
    session: Any,
    path: str | Path,
    regions: Sequence[str],
    instance_types: Iterable[str],
    *,
    today: date | None = None,
) -> RefreshResult:
    """Query the Price List API for the given regions and types, write the catalog to `path`.

    `session` is a boto3 Session (anything with `.client("pricing", region_name=...)`). Rows
    for other regions and types, all spot discounts and the network, Prometheus and Grafana
    prices are kept from the catalog already at `path` (or the packaged one when `path` does not
    exist yet); so is every row the API returns nothing for, which the result lists under `kept`.
    """
    path = Path(path)
    instance_types = list(instance_types)
    stamp = (today or date.today()).isoformat()
    previous = load_catalog(path if path.exists() else DEFAULT_CATALOG_PATH)
    for region in regions:
        _location(region)
    client = session.client("pricing", region_name=PRICING_API_REGION)

    scope = {(instance_type, region) for region in regions for instance_type in instance_types}
    instances = [row for row in previous.instances if (row.instance_type, row.region) not in scope]
    absent = [row for row in previous.absent_instances if (row.instance_type, row.region) not in scope]
    storage = [row for row in previous.storage if row.region not in regions]
    kms = [row for row in previous.kms if row.region not in regions]
    kept: list[str] = []

    for region in regions:
        for instance_type in instance_types:
            row = fetch_instance_price(client, instance_type, region, stamp)
            if isinstance(row, InstancePrice):
                instances.append(row)
                continue
            old = next((r for r in previous.instances if (r.instance_type, r.region) == (instance_type, region)), None)
            if old is not None:
                instances.append(old)
                kept.append(f"kept the previous price of {instance_type} in {region}, ${old.usd_per_hour}/h "
                            f"{_was(old)}: {row.reason}")
            else:
                absent.append(row)
        _fresh_or_previous(
            fetch_gp3_price(client, region, stamp),
            next((r for r in previous.storage if r.region == region), None),
            storage,
            kept,
            what=f"gp3 price in {region}",
            missing="no complete gp3 price (storage, IOPS and throughput)",
            without="; the estimate leaves gp3 volumes there unpriced",
        )
        _fresh_or_previous(
            fetch_kms_price(client, region, stamp),
            next((r for r in previous.kms if r.region == region), None),
            kms,
            kept,
            what=f"KMS key price in {region}",
            missing="no KMS key price",
        )

    # Every table the refresh does not query (spot discounts, network, load balancers, Prometheus,
    # Grafana, file systems, and any added later) is the previous catalog's, as it was.
    catalog = previous.model_copy(update={
        "instances": sorted(instances, key=lambda row: (row.instance_type, row.region)),
        "absent_instances": sorted(absent, key=lambda row: (row.instance_type, row.region)),
        "storage": sorted(storage, key=lambda row: row.region),
        "kms": sorted(kms, key=lambda row: row.region),
    })
    _write_atomically(path, catalog.to_json())
    return RefreshResult(catalog=catalog, kept=kept)
