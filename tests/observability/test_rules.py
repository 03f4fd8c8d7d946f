"""The stack's Prometheus rules, proven with Prometheus's own promtool (Debian's `prometheus`
package, installed by .ci/setup): they load, each alert fires when it must and stays quiet when
it must not (an application's Xid 13 alone never pages), and the cost recording rule multiplies
the running instances by the catalog's price."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from gpucloud.config import load_stack_file
from gpucloud.naming import autoscaling_group_name
from gpucloud.observability import rule_file
from gpucloud.pricing import load_catalog
from support import STACKS
from userdata_checks import require_tool

SETTINGS = load_stack_file(STACKS / "Pulumi.llm-infer.yaml")
GROUP = autoscaling_group_name(SETTINGS.name_base, SETTINGS.config.groups[0].name)
NODE = f'group="{GROUP}",instance_id="i-0abc",instance_type="g5.2xlarge"'
GPU0 = f'gpu="0",pci_bus_id="00000000:00:1E.0",{NODE}'
IDLE_MINUTES = SETTINGS.config.monitoring.idle_minutes
THROTTLE_MINUTES = SETTINGS.config.groups[0].health.throttle_minutes


RULES = {rule["alert"]: rule for group in rule_file(SETTINGS)["groups"] for rule in group["rules"] if "alert" in rule}


def alert(name: str, at: str, firing: list[dict] | None = None) -> dict:
    """promtool compares annotations too: each expected alert carries its rule's, rendered."""
    def rendered(text: str, values: dict) -> str:
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda match: values[match[1]], text)
        return text.replace("{{ $value }}", values.get("value", ""))

    expected = [
        {"exp_labels": {key: value for key, value in item.items() if key != "value"},
         "exp_annotations": {key: rendered(text, item) for key, text in RULES[name]["annotations"].items()}}
        for item in firing or []
    ]
    return {"eval_time": at, "alertname": name, "exp_alerts": expected}


def labels(severity: str, **extra: str) -> dict:
    return {"severity": severity, **extra}


def promtool_tests() -> list[dict]:
    gpu = {"gpu": "0", "pci_bus_id": "00000000:00:1E.0", "group": GROUP, "instance_id": "i-0abc", "instance_type": "g5.2xlarge"}
    node = {key: value for key, value in gpu.items() if key not in ("gpu", "pci_bus_id")}
    price = load_catalog().instance("g5.2xlarge", SETTINGS.region).usd_per_hour
    return [
        {
            "interval": "1m",
            "input_series": [
                {"series": f'gpucloud_xid_events_total{{{GPU0},xid="79",kind="node-fault"}}', "values": "_ _ 1 1 1 1"},
                {"series": f'gpucloud_xid_events_total{{{GPU0},xid="13",kind="application"}}', "values": "0 1 2 3 4 5"},
            ],
            "alert_rule_test": [
                alert("GpuXidNodeFault", "1m"),
                alert("GpuXidNodeFault", "3m", [labels("critical", **gpu, xid="79", kind="node-fault")]),
            ],
        },
        {
            "interval": "1m",
            "input_series": [
                {"series": f'gpucloud_xid_events_total{{{GPU0},xid="13",kind="application"}}', "values": "0+1x30"},
                {"series": f"DCGM_FI_DEV_GPU_UTIL{{{GPU0}}}", "values": "90+0x30"},
                {"series": f"DCGM_FI_DEV_GPU_TEMP{{{GPU0}}}", "values": "70+0x30"},
            ],
            "alert_rule_test": [alert(name, "30m") for name in (
                "GpuXidNodeFault", "GpuTemperatureHigh", "GpusIdle", "GpuMissing", "GpuUncorrectableEcc")],
        },
        {
            "interval": "1m",
            "input_series": [
                {"series": f"DCGM_FI_DEV_GPU_TEMP{{{GPU0}}}", "values": "80 90+0x10"},
                {"series": f"gpucloud_gpus_expected{{{NODE}}}", "values": "4+0x10"},
                {"series": f"gpucloud_gpus_visible{{{NODE}}}", "values": "4 3+0x10"},
                {"series": f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU0}}}", "values": "0 1+0x10"},
                {"series": f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{GPU0}}}", "values": "0 0 2+0x10"},
                {"series": f'gpucloud_node_fault_actions_total{{{NODE},outcome="held"}}', "values": "0 0 1+0x10"},
            ],
            "alert_rule_test": [
                alert("GpuTemperatureHigh", "4m"),
                alert("GpuTemperatureHigh", "7m", [labels("warning", **gpu, value="90")]),
                alert("GpuMissing", "2m"),
                alert("GpuMissing", "4m", [labels("critical", **node, value="3")]),
                alert("GpuRowRemapFailure", "2m", [labels("critical", **gpu)]),
                alert("GpuUncorrectableEcc", "4m", [labels("critical", **gpu)]),
                alert("ReplacementBreakerOpen", "4m", [labels("critical", **node, outcome="held")]),
            ],
        },
        {
            "interval": "1m",
            "input_series": [
                {"series": f"DCGM_FI_DEV_GPU_UTIL{{{GPU0}}}", "values": f"1+0x{IDLE_MINUTES + 10}"},
                {"series": f'gpucloud_gpu_slowdown{{{GPU0},reason="hw_thermal"}}', "values": f"1+0x{THROTTLE_MINUTES + 10}"},
            ],
            "alert_rule_test": [
                alert("GpusIdle", f"{IDLE_MINUTES - 2}m"),
                alert("GpusIdle", f"{IDLE_MINUTES + 2}m", [labels("warning", group=GROUP)]),
                alert("GpuSlowdownSustained", f"{THROTTLE_MINUTES - 2}m"),
                alert("GpuSlowdownSustained", f"{THROTTLE_MINUTES + 2}m",
                      [labels("warning", group=GROUP, instance_id="i-0abc", gpu="0", reason="hw_thermal")]),
            ],
            "promql_expr_test": [{
                "expr": "gpucloud:group_cost_usd_per_hour",
                "eval_time": "5m",
                "exp_samples": [{"labels": f'gpucloud:group_cost_usd_per_hour{{group="{GROUP}"}}', "value": price}],
            }],
        },
        collector_tests(node),
    ]


def collector_tests(node: dict) -> dict:
    """The node collector's own readings (gpucloud.node.collector), one sample a minute: a node whose
    queue stays full for 20 minutes, one that caught up after 5, one that lost samples to a 4xx, one
    whose watch is down, one whose scrapes fail now and then."""
    def at(instance_id: str) -> str:
        return f'project="llm",group="{GROUP}",instance_id="{instance_id}",instance_type="g5.2xlarge"'

    def labelled(instance_id: str, **extra: str) -> dict:
        return {"project": "llm", **node, "instance_id": instance_id, **extra}

    return {
        "interval": "1m",
        "input_series": [
            {"series": f"gpucloud_remote_write_pending_samples{{{at('i-behind')}}}", "values": "0 0 124+124x25"},
            {"series": f"gpucloud_remote_write_pending_samples{{{at('i-caught-up')}}}", "values": "0 124+124x5 0+0x20"},
            {"series": f'gpucloud_remote_write_dropped_samples_total{{{at("i-rejected")},reason="rejected"}}',
             "values": "0 0 0 124+0x25"},
            {"series": f'gpucloud_remote_write_dropped_samples_total{{{at("i-caught-up")},reason="rejected"}}',
             "values": "0+0x25"},
            {"series": f'gpucloud_collector_scrapes_total{{{at("i-blind")},target="watch"}}', "values": "0+1x25"},
            {"series": f'gpucloud_collector_scrape_failures_total{{{at("i-blind")},target="watch",reason="unreachable"}}',
             "values": "0 0 0+1x25"},
            {"series": f'gpucloud_collector_scrape_failures_total{{{at("i-blind")},target="watch",reason="invalid"}}',
             "values": "0+0x25"},
            {"series": f'gpucloud_collector_scrapes_total{{{at("i-flaky")},target="watch"}}', "values": "0+1x25"},
            {"series": f'gpucloud_collector_scrape_failures_total{{{at("i-flaky")},target="watch",reason="unreachable"}}',
             "values": "0+0x5 1+0x5 2+0x5 3+0x10"},
        ],
        "alert_rule_test": [
            alert("RemoteWriteBehind", "15m"),
            alert("RemoteWriteBehind", "20m", [labels("warning", **labelled("i-behind"), value="2356")]),
            alert("RemoteWriteSamplesDropped", "2m"),
            alert("RemoteWriteSamplesDropped", "5m", [labels("warning", **labelled("i-rejected", reason="rejected"))]),
            alert("CollectorScrapesFailing", "10m"),
            alert("CollectorScrapesFailing", "16m", [labels("warning", **labelled("i-blind", target="watch"))]),
        ],
    }


@pytest.fixture(scope="module")
def rules_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "gpu-cloud.rules.yml"
    path.write_text(yaml.safe_dump(rule_file(SETTINGS), sort_keys=False))
    return path


def test_promtool_loads_and_lints_the_rules(rules_path):
    result = subprocess.run([require_tool("promtool"), "check", "rules", str(rules_path)], capture_output=True, text=True)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_each_alert_fires_when_it_must_and_an_application_xid_never_pages(rules_path, tmp_path):
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules_path)], "evaluation_interval": "1m",
                                     "tests": promtool_tests()}, sort_keys=False))

    result = subprocess.run([require_tool("promtool"), "test", "rules", str(tests)], capture_output=True, text=True)

    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_says_what_to_do_and_how_bad_it_is():
    alerts = [rule for group in rule_file(SETTINGS)["groups"] for rule in group["rules"] if "alert" in rule]

    assert {rule["alert"] for rule in alerts} >= {
        "GpuTemperatureHigh", "GpuXidNodeFault", "GpuRowRemapFailure", "GpuRowRemapPending", "GpuUncorrectableEcc",
        "GpuMissing", "GpusIdle", "NodeReplaced", "ReplacementBreakerOpen", "RemoteWriteBehind", "GpuSlowdownSustained",
        "RemoteWriteSamplesDropped", "CollectorScrapesFailing",
    }
    for rule in alerts:
        assert rule["for"] and rule["labels"]["severity"] in ("critical", "warning", "info")
        assert len(rule["annotations"]["description"]) > 60, rule["alert"]


def test_the_cli_writes_the_rule_file_and_dashboards_for_a_stack(tmp_path, capsys):
    import json

    from gpucloud.cli import main

    assert main(["observability", "export", "--stack", "llm-infer", "--out", str(tmp_path)]) == 0

    rules = tmp_path / f"{SETTINGS.name_base}.rules.yml"
    assert yaml.safe_load(rules.read_text()) == rule_file(SETTINGS)
    assert json.loads((tmp_path / "dashboards" / "fleet.json").read_text())["title"].endswith("GPU fleet")
    result = subprocess.run([require_tool("promtool"), "check", "rules", str(rules)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote " in capsys.readouterr().out
