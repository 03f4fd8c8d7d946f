"""A real Prometheus (Debian's package, --web.enable-remote-write-receiver) stands in for the AMP
workspace: the node collector scrapes `watch` running on the H100's recorded nvidia-smi readings
and remote-writes to it; Prometheus's HTTP API shows the GPU series with the node's labels and the
collector's own readings. With the receiver stopped the collector counts its failures and keeps
the samples, and once a receiver is back they arrive, the failures with them."""

from __future__ import annotations

import threading

import pytest

from gpucloud.node.collector import Collector, CollectorSettings
from gpucloud.node.remote_write import RemoteWriter
from gpucloud.node.retry import Backoff
from gpucloud.node.sigv4 import Credentials
from test_prometheus_integration import api, free_port, node, running_prometheus, wait_for  # noqa: F401 - node: the fixture
from test_rules import GROUP

NODE_LABELS = {"project": "llm", "group": GROUP, "instance_id": "i-0abc", "instance_type": "g5.2xlarge"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A remote-write receiver that a test may stop and start again on the same port and TSDB."""
    folder = tmp_path_factory.mktemp("workspace")
    port = free_port()

    def start():
        return running_prometheus(folder, {"global": {}}, "--web.enable-remote-write-receiver", port=port)

    return port, start


@pytest.fixture(scope="module")
def collector(node, workspace, tmp_path_factory):  # noqa: F811 - node: the imported fixture
    """`collect`'s loop in a thread, five times a second, with no pause between retries."""
    _, exporter_port = node
    port, _ = workspace
    writer = RemoteWriter(f"http://127.0.0.1:{port}/api/v1/write", "us-east-1",
                          lambda: Credentials("ASIAEXAMPLE", "secret", "token"),
                          backoff=Backoff(attempts=2, initial_s=0.05), timeout_s=2.0)
    settings = CollectorSettings(interval_s=0.2, scrape_url=f"http://127.0.0.1:{exporter_port}/metrics",
                                 textfile=tmp_path_factory.mktemp("collector") / "collector.prom")
    running = Collector(settings, NODE_LABELS, writer)
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        if stop.wait(seconds):
            raise SystemExit

    def loop() -> None:
        try:
            running.run(sleep=sleep)
        except SystemExit:
            pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield running
    stop.set()
    thread.join(timeout=10)


def test_gpu_readings_arrive_with_the_node_labels_and_the_collectors_own_readings(workspace, collector):
    _, start = workspace
    with start() as port:
        [temperature] = wait_for(lambda: api(port, "query", query="DCGM_FI_DEV_GPU_TEMP")["result"])
        sent = wait_for(lambda: api(port, "query", query="gpucloud_remote_write_samples_total > 0")["result"])
        failures = api(port, "query", query="gpucloud_remote_write_failures_total")["result"]

    labels = temperature["metric"]
    assert {key: labels[key] for key in NODE_LABELS} == NODE_LABELS
    assert labels["UUID"].startswith("GPU-") and labels["modelName"] == "NVIDIA H100 80GB HBM3"
    assert {key: sent[0]["metric"][key] for key in NODE_LABELS} == NODE_LABELS
    assert {series["metric"]["reason"] for series in failures} >= {"5xx", "4xx", "throttled", "network", "credentials"}


def test_a_stopped_receiver_shows_in_the_failure_counters_and_its_samples_arrive_later(workspace, collector):
    _, start = workspace
    with start():
        pass
    earlier = collector.writer.stats.failures["network"]  # a receiver still starting may have refused some already
    wait_for(lambda: collector.writer.stats.failures["network"] >= earlier + 2 and collector.writer.pending_samples > 0)
    local = collector.settings.textfile.read_text()
    assert 'reason="network"} 0.0' not in local

    with start() as port:
        [failed] = wait_for(lambda: api(port, "query", query=f'gpucloud_remote_write_failures_total{{reason="network"}} >= {earlier + 2}')["result"])
        wait_for(lambda: api(port, "query", query="max_over_time(gpucloud_remote_write_pending_samples[1m]) > 0")["result"])

    assert failed["metric"]["instance_id"] == "i-0abc" and float(failed["value"][1]) >= earlier + 2
