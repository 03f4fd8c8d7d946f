"""What `watch` and `collect` produced on a real H100 (tests/fixtures/nvidia_smi/h100-watch/
run-2026-11-25-collect, recorded by record_collect.py from the agent bundle): the /metrics text
parses with the collector's own parser and holds the GPU's readings; a real Prometheus (Debian's
package) scraping that text with the llm-infer stack's rules counts the GPU in its group and raises
nothing for it; and the remote-write requests the collector sent carry the node's labels and its
own readings."""

from __future__ import annotations

import base64
import json

import pytest

from gpucloud.node.collector import parse_exposition
from gpucloud.node.exporter import serve_textfile
from gpucloud.node.remote_write import HEADERS
from gpucloud.observability import rule_file_text
from remote_write_checks import decode_body
from support import ROOT
from test_prometheus_integration import FAST, api, running_prometheus, wait_for
from test_rules import GROUP, SETTINGS

RECORDING = ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-watch" / "run-2026-11-25-collect"
NODE_LABELS = {"project": "device", "group": "gpu-cloud-device-collect", "instance_id": "i-device",
               "instance_type": "device"}
UUID = "GPU-a802e77e-aea9-1a0d-6152-22dc551f004b"
"""The recorded H100's, as `nvidia-smi -L` printed it in machine.txt."""
DCGM_GAUGES = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
               "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_XID_ERRORS")
COLLECTOR_READINGS = ("gpucloud_collector_scrapes_total", "gpucloud_collector_scrape_failures_total",
                      "gpucloud_remote_write_samples_total", "gpucloud_remote_write_failures_total",
                      "gpucloud_remote_write_dropped_samples_total", "gpucloud_remote_write_pending_samples",
                      "gpucloud_remote_write_last_success_timestamp_seconds")


def recorded_samples() -> dict[str, list[tuple[dict[str, str], float]]]:
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    for labels, value in parse_exposition((RECORDING / "metrics.prom").read_text(), {}):
        found = dict(labels)
        by_name.setdefault(found["__name__"], []).append((found, value))
    return by_name


def recorded_requests() -> list[dict]:
    return json.loads((RECORDING / "remote-write-requests.json").read_text())


def test_the_recorded_text_parses_and_holds_the_h100s_readings():
    samples = recorded_samples()

    assert UUID in (RECORDING / "machine.txt").read_text()
    for name in DCGM_GAUGES:
        [(labels, _)] = samples[name]
        assert (labels["gpu"], labels["UUID"], labels["modelName"]) == ("0", UUID, "NVIDIA H100 80GB HBM3"), name
        assert {key: labels[key] for key in NODE_LABELS} == NODE_LABELS, name
    [(_, temperature)] = samples["DCGM_FI_DEV_GPU_TEMP"]
    [(_, free_mib)] = samples["DCGM_FI_DEV_FB_FREE"]
    assert 20 <= temperature <= 60 and free_mib > 80_000
    assert {labels["reason"]: value for labels, value in samples["gpucloud_gpu_slowdown"]} == {
        "hw_thermal": 0.0, "sw_thermal": 0.0, "hw_power_brake": 0.0}
    assert [value for _, value in samples["gpucloud_gpus_expected"]] == [1.0]
    assert [value for _, value in samples["gpucloud_gpus_visible"]] == [1.0]
    assert {labels["outcome"]: value for labels, value in samples["gpucloud_node_fault_actions_total"]} == {
        "replaced": 0.0, "held": 0.0, "reported": 0.0}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """Prometheus scraping the recorded text every second, with the llm-infer stack's rules
    evaluated every second; the recorded group is relabelled to the stack's, whose rules name it."""
    folder = tmp_path_factory.mktemp("h100-prometheus")
    rules = folder / "gpu-cloud.rules.yml"
    rules.write_text(rule_file_text(SETTINGS, interval=FAST))
    exporter = serve_textfile(RECORDING / "metrics.prom", "127.0.0.1:0")
    try:
        with running_prometheus(folder, {
            "global": {"scrape_interval": FAST, "evaluation_interval": FAST},
            "rule_files": [str(rules)],
            "scrape_configs": [{
                "job_name": "gpucloud-node",
                "static_configs": [{"targets": [f"127.0.0.1:{exporter.server_address[1]}"]}],
                "metric_relabel_configs": [{"action": "replace", "target_label": "group", "replacement": GROUP}],
            }],
        }) as port:
            yield port
    finally:
        exporter.shutdown()
        exporter.server_close()


def test_a_real_prometheus_counts_the_h100_in_its_group_and_raises_nothing_but_the_idle_warning(prometheus):
    port = prometheus
    [count] = wait_for(lambda: api(port, "query", query="gpucloud:group_gpus:count")["result"], timeout_s=8)
    # The recorded GPU idled (0 % utilisation), so the stack's GpusIdle goes pending: it proves the
    # alert rules were evaluated over the readings, and it is the only alert they raise.
    idle = wait_for(lambda: [alert for alert in api(port, "alerts")["alerts"]
                             if alert["labels"]["alertname"] == "GpusIdle"], timeout_s=8)

    assert count["metric"] == {"__name__": "gpucloud:group_gpus:count", "group": GROUP}
    assert count["value"][1] == "1"
    assert [(alert["state"], alert["labels"]["group"]) for alert in idle] == [("pending", GROUP)]
    alerts = api(port, "alerts")["alerts"]
    assert [(alert["labels"]["alertname"], alert["state"]) for alert in alerts] == [("GpusIdle", "pending")]
    [slowdown] = api(port, "query", query=f'count(gpucloud_gpu_slowdown{{group="{GROUP}"}} == 0)')["result"]
    assert slowdown["value"][1] == "3"


def test_the_remote_write_requests_carry_the_node_labels_and_the_collectors_own_readings():
    requests = recorded_requests()
    decoded = [decode_body(base64.b64decode(request["body_base64"])) for request in requests]

    assert len(requests) == 3
    for request in requests:
        headers = request["headers"]
        assert {key: headers[key] for key in HEADERS} == HEADERS
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261125/us-east-1/aps/aws4_request, ")
    for series in decoded:
        for labels, samples in series:
            assert {key: labels[key] for key in NODE_LABELS} == NODE_LABELS, labels["__name__"]
            assert list(labels) == sorted(labels) and len(samples) == 1
        gpu_series = [labels for labels, _ in series if "gpu" in labels]
        assert {labels["__name__"] for labels in gpu_series} >= set(DCGM_GAUGES) | {"gpucloud_gpu_slowdown"}
        assert {labels["UUID"] for labels in gpu_series} == {UUID}
        assert {labels["__name__"] for labels, _ in series} >= set(COLLECTOR_READINGS)
    sent_before = [value for series in decoded for labels, [(value, _)] in series
                   if labels["__name__"] == "gpucloud_remote_write_samples_total"]
    scrapes = [value for series in decoded for labels, [(value, _)] in series
               if labels["__name__"] == "gpucloud_collector_scrapes_total"]
    per_request = len(decoded[0])
    assert sent_before == [0.0, per_request, 2.0 * per_request]
    assert scrapes == [1.0, 2.0, 3.0]
    assert "gpucloud_remote_write_samples_total" in (RECORDING / "collector.prom").read_text()
    collector_readings = {dict(labels)["__name__"]: value for labels, value in
                          parse_exposition((RECORDING / "collector.prom").read_text(), {})
                          if "reason" not in dict(labels)}
    assert collector_readings["gpucloud_remote_write_samples_total"] == 3.0 * per_request
    assert collector_readings["gpucloud_remote_write_pending_samples"] == 0.0
