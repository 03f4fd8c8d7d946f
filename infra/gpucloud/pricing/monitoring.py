"""What `monitoring.prometheus` and `monitoring.grafana` cost: Amazon Managed Service for
Prometheus (AMP) by the sample and the stored GB, Amazon Managed Grafana (AMG) by the active user.

- Series: every node sends `SERIES_PER_GPU` per GPU plus `SERIES_PER_NODE` of the agent's and
  `COLLECTOR_SERIES_PER_NODE` of the collector's own (tests/pricing/test_pricing_monitoring.py
  renders the agent's textfile for eight GPUs and checks the first two). Xid event counters appear
  only once a GPU has had an Xid, so they are not counted.
- Samples: one per series per scrape, for every instance-hour the group runs in the scenario.
  Ingestion is tiered on the stack's whole month; AMP's free tier (40M samples, 10 GB a month per
  account) is not deducted, since other workspaces in the account may use it.
- Storage: `BYTES_PER_SAMPLE` bytes a sample (AMP's pricing page: samples are "typically 1 or 2
  bytes"; metric metadata comes on top and is not counted), held for `RETENTION_DAYS` days: the
  month's samples times the retention in months, the steady state once the workspace is full.
- Queries (dashboards, alert and recording rules) depend on use: the estimate lists them as not
  included.
- Grafana: editors x editor licence + viewers x viewer licence; a workspace pays for one editor
  even when nobody signs in.
"""

from __future__ import annotations

from .catalog import HOURS_PER_MONTH, PrometheusPrice

SERIES_PER_GPU = 12
"""The agent's textfile per GPU: seven gauges (temperature, utilisation, framebuffer used and
free, power, row remap failure and pending), the double-bit ECC counter, three slowdown reasons and
DCGM_FI_DEV_XID_ERRORS."""
SERIES_PER_NODE = 5
"""The agent's textfile per node: GPUs expected and visible, and node fault actions by outcome
(replaced, held, reported)."""
COLLECTOR_SERIES_PER_NODE = 15
"""The node's collector about itself: scrapes, scrape failures by 3 reasons, samples sent,
request failures by 6 reasons, dropped samples by 2 reasons, samples pending and the last success
(tests/pricing/test_pricing_monitoring.py counts what gpucloud.node.collector.own_readings gives)."""
MAX_GPUS_PER_NODE = 8
"""The most GPUs any supported type has; a type whose GPU count the estimate is not given is
counted at this, so its series are not underestimated."""

BYTES_PER_SAMPLE = 2
"""https://aws.amazon.com/prometheus/pricing/ (read 2026-11-25 via search corpus): "The storage
charge is determined by the Prometheus metrics samples (typically 1 or 2 bytes) and metadata"; the
upper figure."""
BYTES_PER_GB = 2**30
"""Same page: "1GB is 2^30 bytes"."""
RETENTION_DAYS = 150
"""How long AMP keeps samples when the workspace sets no retention: "data older than 150 days is
deleted from the workspace" (github.com/aws/amazon-managed-service-for-prometheus-roadmap issue 2,
2022-01-21); retention has become configurable since, and the stack sets none."""
DAYS_PER_MONTH = HOURS_PER_MONTH / 24


def series_per_node(gpus: int) -> int:
    return SERIES_PER_GPU * gpus + SERIES_PER_NODE + COLLECTOR_SERIES_PER_NODE


def samples_per_series_hour(scrape_interval_seconds: int) -> float:
    return 3600 / scrape_interval_seconds


def tiered_ingestion(samples: float, price: PrometheusPrice) -> tuple[float, float]:
    """(USD, samples priced) for a month's samples across the row's tiers; samples above a last
    tier that has a bound are not priced."""
    cost = priced = 0.0
    for tier in price.ingestion_tiers:
        top = samples if tier.up_to_samples is None else min(samples, tier.up_to_samples)
        if top > priced:
            cost += (top - priced) / 1e7 * tier.usd_per_ten_million_samples
            priced = top
    return cost, priced


def stored_gb_months(samples_per_month: float) -> float:
    return samples_per_month * BYTES_PER_SAMPLE * (RETENTION_DAYS / DAYS_PER_MONTH) / BYTES_PER_GB
