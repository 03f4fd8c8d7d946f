"""What `monitoring.prometheus` and `monitoring.grafana` add to the estimate: AMP samples and
storage from the series the node agent sends, Grafana licences, and nothing invented where the
catalog has no row."""

from __future__ import annotations

import re

import pytest

from gpucloud.node.collector import ScrapeStats, own_readings
from gpucloud.node.exporter import WATCH_FIELDS, render_textfile
from gpucloud.node.remote_write import RemoteWriter
from gpucloud.node.nvidia import GpuRecord, parse_gpu_query
from gpucloud.pricing import HOURS_PER_MONTH, estimate_stack, load_catalog
from gpucloud.pricing.monitoring import (
    COLLECTOR_SERIES_PER_NODE,
    SERIES_PER_GPU,
    SERIES_PER_NODE,
    series_per_node,
    tiered_ingestion,
)
from support import ROOT

RECORDED_H100 = ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-watch" / "query-watch.csv"
NODE = {"project": "vision", "group": "trainers", "instance_id": "i-0123456789abcdef0", "instance_type": "p5.48xlarge"}
SAMPLE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})? \S+$")


def eight_gpus() -> list[GpuRecord]:
    """The H100 recorded by `watch`, as eight GPUs, with a reading in every field (the recorded
    board answers [N/A] for some; a GPU that does sends fewer series, never more)."""
    (recorded,), stray = parse_gpu_query(RECORDED_H100.read_text(), WATCH_FIELDS)
    assert stray == []
    fields = {name: value if re.fullmatch(r"-?[0-9.]+|[A-Za-z ]+", value) and "N/A" not in value else "0"
              for name, value in recorded.fields.items()}
    return [GpuRecord({**fields, "index": str(index), "pci.bus_id": f"00000000:{0x10 + index:02X}:00.0",
                       "uuid": f"GPU-{index:08d}-0000-0000-0000-000000000000"}) for index in range(8)]


def test_series_constants_are_what_the_agent_writes_for_an_eight_gpu_node():
    text = render_textfile(eight_gpus(), {}, {}, NODE, expected_gpus=8, fault_outcomes={})
    series = [line for line in text.splitlines() if not line.startswith("#")]

    assert all(SAMPLE.match(line) for line in series)
    assert len(series) == 8 * SERIES_PER_GPU + SERIES_PER_NODE
    assert len([line for line in series if 'gpu="3"' in line]) == SERIES_PER_GPU
    assert series_per_node(8) == 8 * SERIES_PER_GPU + SERIES_PER_NODE + COLLECTOR_SERIES_PER_NODE


def test_the_collector_constant_is_what_the_collector_sends_about_itself():
    writer = RemoteWriter("https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write",
                          "us-east-1", lambda: None)
    assert len(own_readings(ScrapeStats(), writer, NODE)) == COLLECTOR_SERIES_PER_NODE


def one_node():
    return {"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 1, "desiredCapacity": 1,
            "onDemandBaseCapacity": 1}


def monitored(stack_config, region="us-east-1", **monitoring):
    config = stack_config(one_node(), region=region)
    return config.model_copy(update={"monitoring": config.monitoring.model_copy(update={
        name: getattr(config.monitoring, name).model_copy(update=values) for name, values in monitoring.items()})})


def lines_named(estimate, text):
    return {line.resource: line for line in estimate.lines if text in line.resource}


def test_one_g5_xlarge_scraped_every_30_s_is_priced_by_the_sample_and_the_stored_byte(stack_config):
    config = monitored(stack_config, prometheus={"enabled": True, "scrape_interval_seconds": 30})

    estimate = estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1})
    found = lines_named(estimate, "Prometheus")

    series = 12 * 1 + 5 + 15
    samples = series * 2 * 60 * 730
    assert samples == 2_803_200
    ingested = found["vision/Prometheus samples ingested"]
    assert ingested.quantity.desired == pytest.approx(samples / 1e7)
    assert ingested.monthly.desired == pytest.approx(samples / 1e7 * 0.90)
    stored = found["vision/Prometheus storage (150-day retention)"]
    gb_months = samples * 2 * (150 / (730 / 24)) / 2**30
    assert stored.quantity.desired == pytest.approx(gb_months)
    assert stored.monthly.desired == pytest.approx(gb_months * 0.03)
    assert estimate.unpriced == []
    assert not lines_named(estimate, "Grafana")


def test_samples_follow_each_scenarios_instance_hours(stack_config):
    group = {**one_node(), "minSize": 0, "maxSize": 4, "desiredCapacity": 2}
    config = stack_config(group)
    config = config.model_copy(update={"monitoring": config.monitoring.model_copy(update={
        "prometheus": config.monitoring.prometheus.model_copy(update={"enabled": True, "scrape_interval_seconds": 60})})})

    ingested = estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1}).lines
    (line,) = [line for line in ingested if line.resource.endswith("samples ingested")]

    per_node = 32 * 60 * HOURS_PER_MONTH / 1e7
    assert (line.quantity.min, line.quantity.desired, line.quantity.max) == pytest.approx((0, 2 * per_node, 4 * per_node))


def test_a_type_without_a_gpu_count_is_counted_at_eight_gpus(stack_config):
    config = monitored(stack_config, prometheus={"enabled": True})

    (line,) = [line for line in estimate_stack(config, "us-east-1").lines if line.resource.endswith("samples ingested")]

    assert line.quantity.desired == pytest.approx(series_per_node(8) * 120 * 730 / 1e7)
    assert "g5.xlarge not given to the estimate, counted as 8 GPUs" in line.note


def test_samples_above_the_last_sourced_tier_are_unpriced_not_guessed():
    row = load_catalog().prometheus_prices("us-east-1")

    cost, priced = tiered_ingestion(3e9, row)

    assert priced == 2e9 and cost == pytest.approx(2e9 / 1e7 * 0.90)


def test_grafana_bills_editors_and_viewers_and_at_least_one_editor(stack_config):
    config = monitored(stack_config, prometheus={"enabled": True}, grafana={"enabled": True, "editors": 2, "viewers": 5})
    nobody = monitored(stack_config, prometheus={"enabled": True}, grafana={"enabled": True, "editors": 0, "viewers": 0})

    found = lines_named(estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1}), "Grafana")
    alone = lines_named(estimate_stack(nobody, "us-east-1", gpus_per_instance={"g5.xlarge": 1}), "Grafana")

    assert found["vision/Grafana editors"].monthly.desired == 2 * 9.0
    assert found["vision/Grafana viewers"].monthly.desired == 5 * 5.0
    assert list(alone) == ["vision/Grafana editors"] and alone["vision/Grafana editors"].monthly.max == 9.0


def test_monitoring_off_adds_no_line(stack_config):
    estimate = estimate_stack(stack_config(one_node()), "us-east-1")

    assert not [line for line in [*estimate.lines, *estimate.unpriced]
                if "Prometheus" in line.resource or "Grafana" in line.resource]


def test_a_region_without_an_amp_row_lists_the_samples_unpriced(stack_config):
    config = monitored(stack_config, region="us-west-2", prometheus={"enabled": True},
                       grafana={"enabled": True, "editors": 1})

    estimate = estimate_stack(config, "us-west-2", gpus_per_instance={"g5.xlarge": 1})

    unpriced = {line.resource: line for line in estimate.unpriced}
    assert unpriced["vision/Prometheus samples ingested"].quantity.desired == pytest.approx(32 * 120 * 730 / 1e7)
    assert "no Amazon Managed Service for Prometheus price for us-west-2" in unpriced["vision/Prometheus samples ingested"].reason
    assert "vision/Prometheus storage (150-day retention)" in unpriced
    assert not lines_named(estimate, "Prometheus")
    assert lines_named(estimate, "Grafana")["vision/Grafana editors"].monthly.desired == 9.0
    assert estimate.partial_in("desired")


def test_prometheus_and_grafana_rows_quote_their_pages():
    catalog = load_catalog()

    (amp,) = catalog.prometheus
    assert amp.region == "us-east-1" and "AmazonPrometheus" in amp.source and amp.date == "2026-09-11"
    assert [(tier.up_to_samples, tier.usd_per_ten_million_samples) for tier in amp.ingestion_tiers] == [(2_000_000_000, 0.9)]
    assert {row.region for row in catalog.grafana} == {"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"}
    assert all("aws.amazon.com/grafana/pricing" in row.source for row in catalog.grafana)


def test_the_max_scenario_counts_the_series_of_the_dearest_type(stack_config):
    config = stack_config({**one_node(), "instanceTypes": ["g5.xlarge", "g5.12xlarge"]})
    prometheus = config.monitoring.prometheus.model_copy(update={"enabled": True, "scrape_interval_seconds": 60})
    config = config.model_copy(update={"monitoring": config.monitoring.model_copy(update={"prometheus": prometheus})})

    lines = estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1, "g5.12xlarge": 4}).lines
    (line,) = [line for line in lines if line.resource.endswith("samples ingested")]

    assert line.quantity.desired == pytest.approx(series_per_node(1) * 60 * HOURS_PER_MONTH / 1e7)
    assert line.quantity.max == pytest.approx(series_per_node(4) * 60 * HOURS_PER_MONTH / 1e7)
    assert line.unit_price.desired == pytest.approx(0.90)


def test_samples_just_above_the_last_sourced_tier_leave_that_part_unpriced(stack_config):
    """714 one-GPU nodes scraped every 30 s send 2,001,484,800 samples a month: 1,484,800 above the tier."""
    config = monitored(stack_config, prometheus={"enabled": True})
    config = config.model_copy(update={"groups": [config.groups[0].model_copy(update={
        "min_size": 714, "max_size": 714, "desired_capacity": 714, "on_demand_base_capacity": 714})]})

    estimate = estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1})

    (above,) = [line for line in estimate.unpriced if "Prometheus" in line.resource]
    assert above.resource == "vision/Prometheus samples ingested above 2,000,000,000 a month"
    assert above.quantity.desired == pytest.approx(1_484_800 / 1e7)


def test_grafana_in_a_region_without_its_price_lists_editors_and_viewers_unpriced(stack_config):
    config = monitored(stack_config, region="eu-central-1", grafana={"enabled": True, "editors": 1, "viewers": 3})

    estimate = estimate_stack(config, "eu-central-1", gpus_per_instance={"g5.xlarge": 1})

    unpriced = {line.resource: line.quantity.min for line in estimate.unpriced if "Grafana" in line.resource}
    assert unpriced == {"vision/Grafana editors": 1, "vision/Grafana viewers": 3}


def test_grafana_licences_cost_the_same_in_every_scenario(stack_config):
    config = monitored(stack_config, grafana={"enabled": True, "editors": 2, "viewers": 5})

    found = lines_named(estimate_stack(config, "us-east-1", gpus_per_instance={"g5.xlarge": 1}), "Grafana")

    editors = found["vision/Grafana editors"].monthly
    assert (editors.min, editors.desired, editors.max) == (2 * 9.0, 2 * 9.0, 2 * 9.0)
