"""A real Prometheus (Debian's package) on 127.0.0.1 scrapes the node agent's `watch` running on the
H100's recorded nvidia-smi readings and a fixture kernel log, evaluates the stack's rules, and its
HTTP API shows what an operator would see: the Xid 79 alert firing, the application's Xid 13
raising nothing, the recording rules answering. A second one scrapes the /metrics text `watch` and
`collect` produced on a real H100 (tests/fixtures/nvidia_smi/h100-watch/run-2026-11-25-collect,
whose other checks are in test_h100_readings.py) and counts the GPU in its group.

Both start together: Prometheus 2.42 scrapes first about 5 s after it starts whatever the interval,
and started one after the other, in two modules, each kept a test worker waiting that long."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.exporter import serve_textfile
from gpucloud.node.watch import WatchSettings, watch
from gpucloud.observability import rule_file_text
from gpucloud.observability.dashboards import dashboards
from support import ROOT
from test_rules import GROUP, SETTINGS
from userdata_checks import require_tool

READINGS = (ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-watch" / "query-watch.csv").read_text()
RECORDING = ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-watch" / "run-2026-11-25-collect"
XID_79 = "Nov 25 10:02:11 ip-10-64-1-20 kernel: [250.3] NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus.\n"
XID_74 = "Nov 25 10:03:11 ip-10-64-1-20 kernel: [310.3] NVRM: Xid (PCI:0000:00:06): 74, NVLink: fatal error detected\n"
XID_13 = "Nov 25 10:02:12 ip-10-64-1-20 kernel: [251.3] NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception\n"
FAST = "200ms"
"""Scrape and rule evaluation interval: Prometheus takes milliseconds, and each step of a test waits
for one or two of them (the stacks evaluate every minute). What is left of a module's wait is
Prometheus 2.42's first scrape, about 5 s after it is ready whatever the interval (its ready check
passed at 0.29 s and the first `up` sample was stamped 5.45 s after start, 2026-11-27)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(port: int, path: str, **query: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/v1/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())["data"]


def wait_for(condition, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not seen within {timeout_s} s")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """`watch` with health.replace off (nothing to call in AWS), one interval a second; one node and
    one Prometheus serve every test of this module."""
    tmp_path = tmp_path_factory.mktemp("node")
    kernel_log = tmp_path / "kern.log"
    kernel_log.write_text("boot\n")
    settings = WatchSettings(interval_s=0.2, kernel_log=kernel_log, state_dir=tmp_path / "state",
                             textfile=tmp_path / "gpucloud.prom", replace=False)
    config = NodeConfig(project="llm", group_name=GROUP, expected_gpu_count=1, expected_gpu_model="H100")
    labels = {"project": "llm", "group": GROUP, "instance_id": "i-0abc", "instance_type": "g5.2xlarge"}
    stop = threading.Event()

    def run(argv, timeout_s, env=None):
        return CommandResult(tuple(argv), 0, stdout=READINGS)

    def sleep(seconds):
        if stop.wait(seconds):
            raise SystemExit

    def unreachable(service, region):
        raise AssertionError(f"health.replace is off: no {service} call")

    thread = threading.Thread(target=lambda: _quietly(watch, config, settings, "i-0abc", "us-east-1", labels, run,
                                                      unreachable, sleep=sleep), daemon=True)
    thread.start()
    server = serve_textfile(settings.textfile, "127.0.0.1:0")
    yield kernel_log, server.server_address[1]
    stop.set()
    server.shutdown()
    thread.join(timeout=5)


def _quietly(function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except SystemExit:
        pass


@contextlib.contextmanager
def running_prometheus(folder: Path, config: dict, *flags: str, port: int | None = None):
    """Debian's Prometheus on 127.0.0.1 with `config`, its TSDB under `folder` (a second start on the
    same folder and port finds what the first stored); yields its port once it is ready."""
    config_path = folder / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config))
    port = port or free_port()
    process = subprocess.Popen(
        [require_tool("prometheus"), f"--config.file={config_path}", f"--storage.tsdb.path={folder / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn", *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: _ready(port))
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def prometheus_servers(node, tmp_path_factory):
    """Both servers, started together: the one scraping `watch` with the stack's rules, and the one
    scraping the recorded H100 text, whose group is relabelled to the stack's so its rules name it."""
    kernel_log, exporter_port = node
    with contextlib.ExitStack() as servers:
        watched = servers.enter_context(running_prometheus(*_scraping(
            tmp_path_factory.mktemp("prometheus"), exporter_port)))
        recorded_exporter = serve_textfile(RECORDING / "metrics.prom", "127.0.0.1:0")
        servers.callback(recorded_exporter.server_close)
        servers.callback(recorded_exporter.shutdown)
        recorded = servers.enter_context(running_prometheus(*_scraping(
            tmp_path_factory.mktemp("h100-prometheus"), recorded_exporter.server_address[1],
            [{"action": "replace", "target_label": "group", "replacement": GROUP}])))
        yield {"watch": (kernel_log, watched), "recorded": recorded}


def _scraping(folder: Path, exporter_port: int, relabel: list[dict] | None = None) -> tuple[Path, dict]:
    """A folder and a config: one exporter scraped, the stack's rules evaluated, both every 200 ms."""
    rules = folder / "gpu-cloud.rules.yml"
    rules.write_text(rule_file_text(SETTINGS, interval=FAST))
    job = {"job_name": "gpucloud-node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}
    if relabel:
        job["metric_relabel_configs"] = relabel
    return folder, {"global": {"scrape_interval": FAST, "evaluation_interval": FAST},
                    "rule_files": [str(rules)], "scrape_configs": [job]}


@pytest.fixture(scope="module")
def prometheus(prometheus_servers):
    return prometheus_servers["watch"]


@pytest.fixture(scope="module")
def recorded_prometheus(prometheus_servers):
    return prometheus_servers["recorded"]


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_a_real_prometheus_fires_the_xid_alert_and_answers_the_recording_rules(prometheus):
    kernel_log, port = prometheus
    wait_for(lambda: api(port, "query", query='DCGM_FI_DEV_GPU_TEMP{job="gpucloud-node"}')["result"])

    with kernel_log.open("a") as log:
        log.write(XID_13)
    wait_for(lambda: api(port, "query", query='gpucloud_xid_events_total{xid="13"}')["result"])
    with kernel_log.open("a") as log:
        log.write(XID_79)

    firing = wait_for(lambda: [alert for alert in api(port, "alerts")["alerts"]
                               if alert["labels"]["alertname"] == "GpuXidNodeFault" and alert["state"] == "firing"])
    assert [(alert["labels"]["xid"], alert["labels"]["kind"], alert["labels"]["severity"]) for alert in firing] == [
        ("79", "node-fault", "critical")]
    assert not [alert for alert in api(port, "alerts")["alerts"] if alert["labels"].get("xid") == "13"]
    [utilization] = api(port, "query", query="gpucloud:group_gpu_utilization:avg")["result"]
    assert utilization["metric"] == {"__name__": "gpucloud:group_gpu_utilization:avg", "group": GROUP}
    [cost] = api(port, "query", query="gpucloud:group_cost_usd_per_hour")["result"]
    assert float(cost["value"][1]) > 0
    [counted] = api(port, "query", query='gpucloud_xid_events_total{xid="13"}')["result"]
    assert (counted["metric"]["kind"], counted["value"][1]) == ("application", "1")


def test_every_dashboard_panel_query_returns_series(prometheus):
    kernel_log, port = prometheus
    with kernel_log.open("a") as log:
        log.write(XID_74)
    wait_for(lambda: api(port, "query", query="gpucloud:group_cost_usd_per_hour")["result"])
    wait_for(lambda: api(port, "query", query='gpucloud_node_fault_actions_total{outcome="reported"} > 0')["result"])
    wait_for(lambda: api(port, "query", query="increase(gpucloud_xid_events_total[1h])")["result"])

    queries = [
        (name, panel["title"], target["expr"].replace("$instance_id", "i-0abc"))
        for name, model in dashboards(SETTINGS).items()
        for panel in model["panels"] if panel.get("type") != "row"
        for target in panel.get("targets", [])
    ]

    assert len(queries) >= 15
    empty = [(name, title, expr) for name, title, expr in queries if not api(port, "query", query=expr)["result"]]
    assert empty == []


def test_a_real_prometheus_counts_the_h100_in_its_group_and_raises_nothing_but_the_idle_warning(recorded_prometheus):
    port = recorded_prometheus
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
