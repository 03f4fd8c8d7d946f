"""Grafana dashboards for a stack's GPU fleet, built with Grafana's own foundation SDK (not
hand-written JSON): a fleet overview, and a node view. The JSON they give imports into any Grafana
with a Prometheus data source that receives the node agent's readings and the stack's rules."""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders.dashboard import Dashboard, QueryVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from gpucloud.config import StackSettings
from gpucloud.naming import autoscaling_group_name

def _query(expr: str, legend: str) -> Dataquery:
    return Dataquery().expr(expr).legend_format(legend).ref_id("A")


def _series(title: str, unit: str, expr: str, legend: str) -> Timeseries:
    return Timeseries().title(title).unit(unit).with_target(_query(expr, legend))


def _groups_selector(settings: StackSettings) -> str:
    names = "|".join(autoscaling_group_name(settings.name_base, group.name) for group in settings.config.groups)
    return f'group=~"{names}"'


def _dashboard(settings: StackSettings, title: str, kind: str, since: str) -> Dashboard:
    """A dashboard of the stack: its title, a uid within Grafana's 40 characters, the stack's tags."""
    return (
        Dashboard(f"gpu-cloud {settings.name_base}: {title}")
        .uid(f"gpucloud-{settings.name_base}-{kind}"[:40])
        .tags(["gpu-cloud", settings.name_base])
        .refresh("1m")
        .time(since, "now")
    )


def fleet_overview(settings: StackSettings) -> Dashboard:
    groups = _groups_selector(settings)
    return (
        _dashboard(settings, "GPU fleet", "fleet", "now-6h")
        .with_row(Row("Fleet"))
        .with_panel(_series("GPUs in service", "short", f"gpucloud:group_gpus:count{{{groups}}}", "{{group}}"))
        .with_panel(_series("GPU utilization", "percent", f"gpucloud:group_gpu_utilization:avg{{{groups}}}", "{{group}}"))
        .with_panel(_series("GPU memory used", "mbytes", f"sum by (group) (DCGM_FI_DEV_FB_USED{{{groups}}})", "{{group}}"))
        .with_panel(_series("Hottest GPU", "celsius", f"max by (group) (DCGM_FI_DEV_GPU_TEMP{{{groups}}})", "{{group}}"))
        .with_panel(_series("GPU power", "watt", f"sum by (group) (DCGM_FI_DEV_POWER_USAGE{{{groups}}})", "{{group}}"))
        .with_row(Row("Faults and money"))
        .with_panel(_series("Xid events", "short",
                            f"sum by (group, xid, kind) (increase(gpucloud_xid_events_total{{{groups}}}[1h]))",
                            "{{group}} Xid {{xid}} ({{kind}})"))
        .with_panel(_series("Node replacements", "short",
                            f"sum by (group, outcome) (increase(gpucloud_node_fault_actions_total{{{groups}}}[1h]))",
                            "{{group}} {{outcome}}"))
        .with_panel(Stat().title("Estimated cost per hour").unit("currencyUSD")
                    .with_target(_query(f"sum(gpucloud:group_cost_usd_per_hour{{{groups}}})", "USD/h")))
    )


def node_view(settings: StackSettings) -> Dashboard:
    node = f'{_groups_selector(settings)},instance_id="$instance_id"'
    return (
        _dashboard(settings, "GPU node", "node", "now-3h")
        .with_variable(QueryVariable("instance_id").label("Instance")
                       .query(f"label_values(DCGM_FI_DEV_GPU_TEMP{{{_groups_selector(settings)}}}, instance_id)"))
        .with_panel(_series("GPU utilization", "percent", f"DCGM_FI_DEV_GPU_UTIL{{{node}}}", "GPU {{gpu}}"))
        .with_panel(_series("GPU memory used", "mbytes", f"DCGM_FI_DEV_FB_USED{{{node}}}", "GPU {{gpu}}"))
        .with_panel(_series("GPU temperature", "celsius", f"DCGM_FI_DEV_GPU_TEMP{{{node}}}", "GPU {{gpu}}"))
        .with_panel(_series("GPU power", "watt", f"DCGM_FI_DEV_POWER_USAGE{{{node}}}", "GPU {{gpu}}"))
        .with_panel(_series("Slowdown", "short", f"gpucloud_gpu_slowdown{{{node}}}", "GPU {{gpu}} {{reason}}"))
        .with_panel(_series("Xid events", "short", f"increase(gpucloud_xid_events_total{{{node}}}[1h])",
                            "GPU {{gpu}} Xid {{xid}} ({{kind}})"))
        .with_panel(_series("GPUs visible / expected", "short",
                            f"gpucloud_gpus_visible{{{node}}} or gpucloud_gpus_expected{{{node}}}", "{{__name__}}"))
    )


def dashboards(settings: StackSettings) -> dict[str, dict[str, Any]]:
    """File name -> the dashboard's JSON model."""
    encoder = JSONEncoder(sort_keys=True)
    return {
        "fleet.json": json.loads(encoder.encode(fleet_overview(settings).build())),
        "node.json": json.loads(encoder.encode(node_view(settings).build())),
    }


def dashboard_files(settings: StackSettings) -> dict[str, str]:
    """The dashboards as the JSON text Grafana imports, by file name (what `gpucloud observability
    export` writes and the stack provisions into Managed Grafana)."""
    return {name: json.dumps(model, indent=2, sort_keys=True) + "\n" for name, model in dashboards(settings).items()}
