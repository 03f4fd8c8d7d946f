"""The price catalog: a data file in the package, every row with its source and date.

The catalog prices only what it has a source for. A type/region pair without a row is not
guessed: lookups raise `PriceNotFound` naming what is missing (and why, when the catalog
records that a type is not offered in a region); the estimate lists it as unpriced.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

DEFAULT_CATALOG_PATH = Path(__file__).resolve().parent.parent / "data" / "prices.json"

HOURS_PER_MONTH = 730

SUPPORTED_REGIONS = (
    "us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1",
    "us-east-2", "us-west-1", "ca-central-1", "eu-west-2", "eu-central-1", "eu-north-1",
    "ap-northeast-2", "ap-southeast-1", "ap-southeast-2", "ap-south-1",
    "af-south-1", "ap-east-1", "ap-northeast-3", "ap-south-2", "ap-southeast-3", "ap-southeast-5",
    "eu-central-2", "eu-south-1", "eu-south-2", "eu-west-3", "il-central-1", "me-central-1",
    "me-south-1", "sa-east-1",
)
"""The regions the catalog answers for every supported GPU type (a price, or a row saying why not):
those `gpucloud prices refresh` knows a Price List location for. The first fourteen, then (added
2026-11-27) every other commercial region where the instance source prices at least one supported
type on demand. In all of them the catalog also prices the KMS key and the network (NAT gateway,
interface endpoint, public IPv4). gp3 volumes (storage, and IOPS and throughput above the free
baseline) are priced everywhere but ap-southeast-5, which AWS's EBS data file (2024-07-18) lacks.
FSx for Lustre: SCRATCH_2 everywhere but ap-southeast-5; PERSISTENT_2 at every throughput in the
first fourteen and ap-east-1, at 125 and 250 MB/s/TiB only in il-central-1 and ap-southeast-5, and
not at all in the other eleven added regions, whose price file lists no PERSISTENT_2 key.
Application Load Balancers in the first fourteen but us-west-1 and eu-north-1; spot discounts in
us-east-1 and us-west-2 only; Amazon Managed Grafana in the first four; Amazon Managed Service for
Prometheus in us-east-1. No dated source was found for the rest, so those lines stay unpriced."""

SUPPORTED_INSTANCE_TYPES = (
    "g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.metal",
    "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge",
    "g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge",
    "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge",
    "g6e.48xlarge",
    "g5g.xlarge", "g5g.2xlarge", "g5g.4xlarge", "g5g.8xlarge", "g5g.16xlarge", "g5g.metal",
    "g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge",
    "gr6.4xlarge", "gr6.8xlarge", "gr6f.4xlarge",
    "g7.2xlarge", "g7.4xlarge", "g7.8xlarge", "g7.12xlarge", "g7.24xlarge", "g7.48xlarge",
    "g7e.2xlarge", "g7e.4xlarge", "g7e.8xlarge", "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge",
    "p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p3dn.24xlarge",
    "p4d.24xlarge", "p4de.24xlarge",
    "p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "p6-b200.48xlarge", "p6-b300.48xlarge",
)
"""The types `gpucloud prices refresh` asks about by default, and the catalog answers for in every
supported region (a price, or a row saying why not): every type DescribeInstanceTypes lists with
GpuInfo in those regions, fractional ones (g6f, gr6f) included, and the retired p3."""


class PricingError(Exception):
    """A cost estimate or catalog operation that cannot be completed; the message says why."""


class PriceNotFound(PricingError):
    """The catalog has no price for something the stack uses."""


def _iso_date(text: str) -> str:
    """A real calendar day written YYYY-MM-DD: "2026", "2026-03" or a date with a remark is not a date."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise ValueError(f"{text!r} is not a date in YYYY-MM-DD form")
    date.fromisoformat(text)
    return text


# Every row ends with where its figure comes from and the date of that figure.
Source = Annotated[str, Field(min_length=1)]
TakenOn = Annotated[str, AfterValidator(_iso_date)]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class InstancePrice(_Row):
    """On-demand Linux, shared tenancy, per instance-hour."""

    instance_type: str
    region: str
    usd_per_hour: float = Field(gt=0)
    source: Source
    date: TakenOn


class AbsentInstance(_Row):
    """A type/region pair the catalog deliberately leaves unpriced, with the reason: the type is not
    offered there, or no published price could be found (a preview type, say). Never a guess."""

    instance_type: str
    region: str
    reason: str
    source: Source
    date: TakenOn


class StoragePrice(_Row):
    """gp3 per GB-month, plus IOPS and throughput provisioned above the free baseline.

    IOPS and throughput may be null where no dated source gives them: a volume provisioned
    above the baseline is then unpriced."""

    region: str
    volume_type: str = "gp3"
    usd_per_gb_month: float = Field(gt=0)
    usd_per_iops_month: float | None = Field(ge=0)
    usd_per_mibps_month: float | None = Field(ge=0)
    baseline_iops: int = 3000
    baseline_mibps: int = 125
    source: Source
    date: TakenOn


class KmsPrice(_Row):
    region: str
    usd_per_key_month: float = Field(gt=0)
    source: Source
    date: TakenOn


class NetworkPrice(_Row):
    """What a created network costs by the hour: NAT gateways, the public IPv4 address each holds,
    and interface endpoints per zone. Per-GB processing is recorded for the note, not estimated."""

    region: str
    nat_gateway_usd_per_hour: float = Field(gt=0)
    nat_usd_per_gb: float = Field(ge=0)
    interface_endpoint_usd_per_az_hour: float = Field(gt=0)
    public_ipv4_usd_per_hour: float = Field(ge=0)
    source: Source
    date: TakenOn


class LoadBalancerPrice(_Row):
    """An Application Load Balancer's hour and its Load Balancer Capacity Unit (LCU) hour."""

    region: str
    alb_usd_per_hour: float = Field(gt=0)
    lcu_usd_per_hour: float = Field(gt=0)
    source: Source
    date: TakenOn


class IngestionTier(_Row):
    """One band of a month's samples: the price of every 10 million up to `up_to_samples` (counted
    from the month's first sample); None on the last band means no upper bound."""

    up_to_samples: int | None = Field(gt=0)
    usd_per_ten_million_samples: float = Field(gt=0)


class PrometheusPrice(_Row):
    """Amazon Managed Service for Prometheus: samples ingested in tiers, storage per GB-month (1 GB
    is 2^30 bytes), query samples processed per billion. Bands the source does not give are left
    out: samples above a last band that has a bound are unpriced. Null storage or query prices are
    unpriced likewise."""

    region: str
    ingestion_tiers: list[IngestionTier] = Field(min_length=1)
    storage_usd_per_gb_month: float | None = Field(gt=0)
    query_usd_per_billion_samples: float | None = Field(gt=0)
    source: Source
    date: TakenOn

    @model_validator(mode="after")
    def tiers_rise(self) -> PrometheusPrice:
        bounds = [tier.up_to_samples for tier in self.ingestion_tiers]
        if None in bounds[:-1]:
            raise ValueError("only the last ingestion tier may be unbounded")
        if any(later <= earlier for earlier, later in zip(bounds, bounds[1:]) if later is not None):
            raise ValueError("ingestion tiers must rise: each upToSamples above the one before")
        return self


class GrafanaPrice(_Row):
    """Amazon Managed Grafana licences per active user per workspace and month."""

    region: str
    editor_usd_per_user_month: float = Field(gt=0)
    viewer_usd_per_user_month: float = Field(gt=0)
    source: Source
    date: TakenOn


class LustrePrice(_Row):
    """FSx for Lustre storage per GB-month, by deployment type and (PERSISTENT_2) throughput per TiB;
    throughput is part of the storage price, not billed apart."""

    region: str
    deployment_type: str
    throughput_per_tib: int | None = None
    usd_per_gb_month: float = Field(gt=0)
    source: Source
    date: TakenOn


class SpotDiscount(_Row):
    """The smallest published spot saving among a family's types in one region, as a fraction of on-demand."""

    family: str
    region: str
    discount: float = Field(ge=0, lt=1)
    source: Source
    date: TakenOn


class Catalog(BaseModel):
    """The whole price catalog, as stored in `data/prices.json`."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    schema_version: int = 1
    currency: str = "USD"
    description: str = ""
    instances: list[InstancePrice] = Field(default_factory=list)
    absent_instances: list[AbsentInstance] = Field(default_factory=list)
    storage: list[StoragePrice] = Field(default_factory=list)
    kms: list[KmsPrice] = Field(default_factory=list)
    spot_discounts: list[SpotDiscount] = Field(default_factory=list)
    network: list[NetworkPrice] = Field(default_factory=list)
    load_balancers: list[LoadBalancerPrice] = Field(default_factory=list)
    prometheus: list[PrometheusPrice] = Field(default_factory=list)
    grafana: list[GrafanaPrice] = Field(default_factory=list)
    file_systems: list[LustrePrice] = Field(default_factory=list)

    @model_validator(mode="after")
    def one_row_per_key(self) -> Catalog:
        """Every lookup takes the first row that matches, so a second row for the same key would be
        silently ignored (and a later edit of it have no effect): refuse such a catalog instead."""
        tables = (
            ("instances and absentInstances", [*self.instances, *self.absent_instances], ("instance_type", "region")),
            ("storage", self.storage, ("region", "volume_type")),
            ("kms", self.kms, ("region",)),
            ("spotDiscounts", self.spot_discounts, ("family", "region")),
            ("network", self.network, ("region",)),
            ("loadBalancers", self.load_balancers, ("region",)),
            ("prometheus", self.prometheus, ("region",)),
            ("grafana", self.grafana, ("region",)),
            ("fileSystems", self.file_systems, ("region", "deployment_type", "throughput_per_tib")),
        )
        for table, rows, fields in tables:
            counts = Counter(tuple(getattr(row, name) for name in fields) for row in rows)
            repeated = [key for key, count in counts.items() if count > 1]
            if repeated:
                shown = "; ".join(", ".join(f"{to_camel(name)} {value}" for name, value in zip(fields, key)) for key in repeated)
                raise ValueError(f"{table} has more than one row for {shown}")
        return self

    def instance_row(self, instance_type: str, region: str) -> InstancePrice | AbsentInstance | None:
        """What the catalog says of a type in a region: its price, why it has none, or nothing."""
        for row in self.instances:
            if row.instance_type == instance_type and row.region == region:
                return row
        for row in self.absent_instances:
            if row.instance_type == instance_type and row.region == region:
                return row
        return None

    def instance(self, instance_type: str, region: str) -> InstancePrice:
        row = self.instance_row(instance_type, region)
        if isinstance(row, InstancePrice):
            return row
        if isinstance(row, AbsentInstance):
            raise PriceNotFound(f"no price for instance type {instance_type} in {region}: {row.reason}")
        raise PriceNotFound(f"no price for instance type {instance_type} in {region}: the catalog has no row for it")

    def gp3(self, region: str) -> StoragePrice:
        for row in self.storage:
            if row.region == region and row.volume_type == "gp3":
                return row
        raise PriceNotFound(f"no gp3 storage price for {region}: the catalog has no row for it")

    def lustre(self, region: str, deployment_type: str, throughput_per_tib: int | None) -> LustrePrice:
        for row in self.file_systems:
            if (row.region, row.deployment_type, row.throughput_per_tib) == (region, deployment_type, throughput_per_tib):
                return row
        tier = f" at {throughput_per_tib} MB/s/TiB" if throughput_per_tib else ""
        raise PriceNotFound(f"no FSx for Lustre {deployment_type}{tier} price for {region}: the catalog has no row for it")

    def kms_key(self, region: str) -> KmsPrice:
        for row in self.kms:
            if row.region == region:
                return row
        raise PriceNotFound(f"no KMS key price for {region}: the catalog has no row for it")

    def load_balancer_prices(self, region: str) -> LoadBalancerPrice:
        for row in self.load_balancers:
            if row.region == region:
                return row
        raise PriceNotFound(f"no Application Load Balancer price for {region}: the catalog has no row for it")

    def network_prices(self, region: str) -> NetworkPrice:
        for row in self.network:
            if row.region == region:
                return row
        raise PriceNotFound(f"no NAT gateway or VPC endpoint price for {region}: the catalog has no row for it")

    def prometheus_prices(self, region: str) -> PrometheusPrice:
        for row in self.prometheus:
            if row.region == region:
                return row
        raise PriceNotFound(f"no Amazon Managed Service for Prometheus price for {region}: the catalog has no row for it")

    def grafana_prices(self, region: str) -> GrafanaPrice:
        for row in self.grafana:
            if row.region == region:
                return row
        raise PriceNotFound(f"no Amazon Managed Grafana price for {region}: the catalog has no row for it")

    def spot_discount(self, family: str, region: str) -> SpotDiscount | None:
        """The family's spot discount in the region, or None: then spot is priced like on-demand."""
        for row in self.spot_discounts:
            if row.family == family and row.region == region:
                return row
        return None

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=1, ensure_ascii=False) + "\n"


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read a catalog file (by default the one shipped in the package). The catalog is frozen and
    shared: a file unchanged since it was last read (same size and modification time) is not
    parsed again, as a plan, its alert rules and its estimate each ask for it (validating it took
    4.9% of the test suite's samples, py-spy, 2026-11-27)."""
    path = Path(path) if path is not None else DEFAULT_CATALOG_PATH
    try:
        status = path.stat()
    except FileNotFoundError:
        raise PricingError(f"price catalog {path} does not exist") from None
    return _parsed_catalog(path.resolve(), status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=8)
def _parsed_catalog(path: Path, modified_ns: int, size: int) -> Catalog:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PricingError(f"price catalog {path} does not exist") from None
    except json.JSONDecodeError as error:
        raise PricingError(f"price catalog {path} is not valid JSON: {error}") from None
    try:
        return Catalog.model_validate(document)
    except ValidationError as error:
        raise PricingError(f"price catalog {path} does not match the catalog schema:\n{error}") from None


def instance_family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]
