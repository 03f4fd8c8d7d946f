"""Cost of a stack before `pulumi up`: price catalog, estimate, budget checks, catalog refresh.

The terminal table is `gpucloud.pricing.render` (it needs rich, from the `gpucloud[plan]` extra)."""

from .budget import Finding, budget_findings, unpriced_finding
from .catalog import (
    DEFAULT_CATALOG_PATH,
    HOURS_PER_MONTH,
    SUPPORTED_INSTANCE_TYPES,
    SUPPORTED_REGIONS,
    Catalog,
    PriceNotFound,
    PricingError,
    load_catalog,
)
from .estimate import (
    CostEstimate,
    CostLine,
    GroupEstimate,
    ReservedCapacity,
    ScenarioValues,
    UnpricedLine,
    estimate_stack,
)
from .refresh import RefreshResult, refresh_catalog
from .unpriced_compute import unpriced_compute, unpriced_compute_finding

__all__ = [
    "DEFAULT_CATALOG_PATH",
    "HOURS_PER_MONTH",
    "SUPPORTED_INSTANCE_TYPES",
    "SUPPORTED_REGIONS",
    "Catalog",
    "CostEstimate",
    "CostLine",
    "Finding",
    "GroupEstimate",
    "PriceNotFound",
    "PricingError",
    "RefreshResult",
    "ScenarioValues",
    "UnpricedLine",
    "budget_findings",
    "estimate_stack",
    "ReservedCapacity",
    "load_catalog",
    "refresh_catalog",
    "unpriced_compute",
    "unpriced_compute_finding",
    "unpriced_finding",
]
