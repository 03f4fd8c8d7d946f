"""The stack's Grafana dashboards, built with grafana-foundation-sdk: every panel a query with its
unit, over readings the node agent exports or the stack's rules record (the Prometheus
integration test runs each query against a real Prometheus)."""

from __future__ import annotations

import re

from gpucloud.observability import rule_file
from gpucloud.observability.dashboards import dashboards
from test_rules import SETTINGS

EXPORTED = {
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
    "gpucloud_xid_events_total", "gpucloud_node_fault_actions_total", "gpucloud_gpu_slowdown",
    "gpucloud_gpus_visible", "gpucloud_gpus_expected",
}


def test_the_fleet_overview_and_node_view_show_what_operators_ask_for():
    models = dashboards(SETTINGS)

    titles = {name: [panel["title"] for panel in model["panels"] if panel["type"] != "row"] for name, model in models.items()}
    assert titles["fleet.json"] == ["GPUs in service", "GPU utilization", "GPU memory used", "Hottest GPU", "GPU power",
                                    "Xid events", "Node replacements", "Estimated cost per hour"]
    assert {"GPU utilization", "GPU temperature", "Slowdown", "Xid events", "GPUs visible / expected"} <= set(titles["node.json"])
    [variable] = models["node.json"]["templating"]["list"]
    assert variable["name"] == "instance_id" and variable["type"] == "query"
    for model in models.values():
        assert len(model["uid"]) <= 40 and model["tags"] == ["gpu-cloud", SETTINGS.name_base]


def test_every_query_reads_an_exported_or_recorded_series():
    recorded = {rule["record"] for group in rule_file(SETTINGS)["groups"] for rule in group["rules"] if "record" in rule}
    for model in dashboards(SETTINGS).values():
        for panel in (panel for panel in model["panels"] if panel["type"] != "row"):
            [target] = panel["targets"]
            assert target["refId"] == "A" and panel["fieldConfig"]["defaults"]["unit"]
            names = set(re.findall(r"(?<![\w:])([A-Za-z_][\w:]*)\{", target["expr"]))
            assert names and names <= EXPORTED | recorded, (panel["title"], names)
