"""The watch loop on recorded H100 readings and a fixture kernel log: healthy intervals export
readings and act on nothing; an Xid 79 gets the node replaced once; with replacement off it is
only reported; Xid 13 never replaces."""

from __future__ import annotations

import datetime
import json

import pytest

from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.watch import WatchSettings, watch
from node_fakes import GROUP, REGION, aws_client, fixture_text

READINGS = fixture_text("h100-watch/query-watch.csv")
XID_79 = "Nov 24 10:02:11 ip-10-64-1-20 kernel: [250.3] NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus.\n"
XID_13 = "Nov 24 10:02:11 ip-10-64-1-20 kernel: [250.3] NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception\n"
LABELS = {"project": "demo", "group": GROUP, "instance_id": "", "instance_type": "p5.48xlarge"}


class Node:
    """nvidia-smi answering the recorded readings; the kernel log a file the test appends to."""

    def __init__(self, tmp_path):
        self.kernel_log = tmp_path / "kern.log"
        self.kernel_log.write_text("boot\n")
        self.settings = WatchSettings(interval_s=60, kernel_log=self.kernel_log, state_dir=tmp_path / "state",
                                      textfile=tmp_path / "textfile" / "gpucloud.prom")
        self.commands: list[tuple[str, ...]] = []
        self.appended: list[str] = []

    def run(self, argv, timeout_s, env=None):
        self.commands.append(tuple(argv))
        if argv[0] == "nvidia-smi":
            return CommandResult(tuple(argv), 0, stdout=READINGS)
        return CommandResult(tuple(argv), 0)

    def sleep(self, seconds):
        if self.appended:
            with self.kernel_log.open("a") as log:
                log.write(self.appended.pop(0))


def run_watch(node, instance_id, intervals, replace=True, config=None):
    settings = node.settings if replace else WatchSettings(**{**node.settings.__dict__, "replace": False})
    return watch(config or NodeConfig(group_name=GROUP, region=REGION, expected_gpu_count=1), settings, instance_id,
                 REGION, LABELS, node.run, aws_client, sleep=node.sleep, max_intervals=intervals)


def health(instance_id):
    [instance] = aws_client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance_id])["AutoScalingInstances"]
    return instance["HealthStatus"].upper()


def test_healthy_intervals_export_the_readings_and_act_on_nothing(gpu_group, tmp_path):
    node = Node(tmp_path)
    state = run_watch(node, gpu_group.instance_id, intervals=3)
    assert state.outcome is None and health(gpu_group.instance_id) == "HEALTHY"
    text = node.settings.textfile.read_text()
    assert "DCGM_FI_DEV_GPU_TEMP{" in text and "DCGM_FI_DEV_XID_ERRORS{" in text
    assert sum(1 for argv in node.commands if argv[0] == "nvidia-smi") == 3


@pytest.mark.node_aws_calls("healthReplace")
def test_an_xid_79_gets_the_node_replaced_once(gpu_group, tmp_path):
    node = Node(tmp_path)
    node.appended = [XID_79]
    state = run_watch(node, gpu_group.instance_id, intervals=5)
    assert state.outcome == "replaced" and health(gpu_group.instance_id) == "UNHEALTHY"
    assert state.xid_counts == {("00:06", 79, "node-fault"): 1}
    assert 'gpucloud_xid_events_total{' in node.settings.textfile.read_text()


def test_with_replacement_off_a_fault_is_only_reported(gpu_group, tmp_path):
    node = Node(tmp_path)
    node.appended = [XID_79]
    state = run_watch(node, gpu_group.instance_id, intervals=3, replace=False)
    assert state.outcome == "reported" and health(gpu_group.instance_id) == "HEALTHY"


def test_xid_13_alone_never_replaces_the_node(gpu_group, tmp_path):
    node = Node(tmp_path)
    node.appended = [XID_13, XID_13]
    state = run_watch(node, gpu_group.instance_id, intervals=4)
    assert state.outcome is None and health(gpu_group.instance_id) == "HEALTHY"
    assert state.xid_counts == {("00:06", 13, "application"): 2}


@pytest.mark.node_aws_calls("healthReplace")
def test_a_gpu_missing_from_the_count_gets_the_node_replaced(gpu_group, tmp_path):
    node = Node(tmp_path)
    config = NodeConfig(group_name=GROUP, region=REGION, expected_gpu_count=8)
    state = run_watch(node, gpu_group.instance_id, intervals=2, config=config)
    assert state.outcome == "replaced"



@pytest.mark.node_aws_calls("watch")
def test_sustained_thermal_slowdown_is_counted_in_cloudwatch_and_never_replaces(gpu_group, tmp_path):
    node = Node(tmp_path)
    throttled = READINGS.replace("Not Active, Not Active, Not Active", "Active, Not Active, Not Active")
    assert throttled != READINGS
    minutes = iter(range(0, 3600, 60))
    state = watch(NodeConfig(group_name=GROUP, region=REGION, expected_gpu_count=1), node.settings, gpu_group.instance_id,
                  REGION, LABELS, lambda argv, timeout_s, env=None: CommandResult(tuple(argv), 0, stdout=throttled),
                  aws_client, sleep=node.sleep, clock=lambda: float(next(minutes)), max_intervals=12)

    assert state.outcome is None and health(gpu_group.instance_id) == "HEALTHY"
    [point] = aws_client("cloudwatch").get_metric_statistics(
        Namespace="gpu-cloud/Node", MetricName="ThrottledGpus", Dimensions=[{"Name": "AutoScalingGroupName", "Value": GROUP}],
        StartTime=datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1),
        EndTime=datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=1), Period=3600, Statistics=["Sum"],
    )["Datapoints"]
    assert point["Sum"] == 2, "throttled from minute 10 of the 11 minutes watched: the last two intervals"

H100_RUN = "h100-watch/run-2026-11-25"
H100_LABELS = {"project": "device", "group": "gpu-cloud-device-watch", "instance_id": "i-device", "instance_type": "device"}


def test_the_textfile_is_what_watch_wrote_on_the_real_h100():
    """record_watch.py ran `watch` from the bundle on an H100 for four 15 s intervals; the exporter
    turns the readings it recorded into the textfile it wrote there (and the readings added since)."""
    from gpucloud.node.exporter import WATCH_FIELDS, render_textfile
    from gpucloud.node.nvidia import parse_gpu_query

    last_reading = fixture_text(f"{H100_RUN}/query-watch-intervals.csv").splitlines()[-1] + "\n"
    gpus, stray = parse_gpu_query(last_reading, WATCH_FIELDS)

    assert stray == [] and len(gpus) == 1
    rendered = render_textfile(gpus, {}, {}, H100_LABELS).splitlines()
    recorded = fixture_text(f"{H100_RUN}/healthy-interval-4.prom").splitlines()
    assert [line for line in rendered if line in recorded] == recorded, "every line written there, in order"
    assert [line for line in rendered if line not in recorded] == [
        "# HELP gpucloud_gpu_slowdown Whether the GPU runs slowed down for this reason (1) or not (0).",
        "# TYPE gpucloud_gpu_slowdown gauge",
        *(f'gpucloud_gpu_slowdown{{gpu="0",UUID="GPU-2a6ac75e-286e-d2b7-b98d-7ab75dc6b06e",pci_bus_id="00000000:00:06.0",'
          f'modelName="NVIDIA H100 80GB HBM3",project="device",group="gpu-cloud-device-watch",instance_id="i-device",'
          f'instance_type="device",reason="{reason}"}} 0' for reason in ("hw_thermal", "sw_thermal", "hw_power_brake")),
    ], "added since that run: the slowdown reasons, all off on that idle GPU"


def test_the_replayed_xid_79_on_the_h100_counted_one_node_fault_and_marked_the_node():
    prom = fixture_text(f"{H100_RUN}/fault-replay.prom")
    calls = json.loads(fixture_text(f"{H100_RUN}/aws-calls.json"))

    assert 'xid="79",kind="node-fault"} 1' in prom and "DCGM_FI_DEV_XID_ERRORS{" in prom
    assert [(call["operation"], call["parameters"].get("MetricName") or call["parameters"].get("HealthStatus")
             or call["parameters"]["MetricData"][0]["MetricName"]) for call in calls] == [
        ("put_metric_data", "NodeFaults"), ("get_metric_statistics", "NodeReplacements"),
        ("put_metric_data", "NodeReplacements"), ("set_instance_health", "Unhealthy"),
    ]
    assert "restart after the fault: outcome None, xid counts {}" in fixture_text(f"{H100_RUN}/watch.log")
