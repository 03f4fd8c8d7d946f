"""What `watch` and `collect` produced on a real H100 (tests/fixtures/nvidia_smi/h100-watch/
run-2026-11-25-collect, recorded by record_collect.py from the agent bundle): the /metrics text
parses with the collector's own parser and holds the GPU's readings, and the remote-write requests
the collector sent carry the node's labels and its own readings. A real Prometheus scraping that
text with the llm-infer stack's rules is in test_prometheus_integration.py, started together with
the one that scrapes `watch`."""

from __future__ import annotations

import base64
import json

from gpucloud.node.collector import parse_exposition
from gpucloud.node.remote_write import HEADERS
from remote_write_checks import decode_body
from test_prometheus_integration import RECORDING

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
