"""Prometheus recording and alerting rules for one stack, over the node agent's readings (named as
dcgm-exporter names them where they mean the same; see gpucloud.node.exporter).

Every alert has a `for`, a severity (`critical`: a node or its GPUs are broken or the fleet cannot
heal; `warning`: act soon; `info`: for the record) and a description that says what to do. An
application's own Xids (13, 31, 43, ...) raise nothing: they are the job's, not the node's.
The thresholds are the stack's: `monitoring.temperatureThresholdC`, `.idleUtilizationPercent`,
`.idleMinutes`, and per group `health.throttleMinutes`.
"""

from __future__ import annotations

from typing import Any

import yaml
from gpucloud.config import StackSettings
from gpucloud.naming import autoscaling_group_name
from gpucloud.pricing import PricingError, load_catalog

RULE_GROUP = "gpu-cloud"
XID_NODE_FAULT = (
    'increase(gpucloud_xid_events_total{kind="node-fault"}[10m]) > 0 or '
    '(gpucloud_xid_events_total{kind="node-fault"} > 0 unless gpucloud_xid_events_total{kind="node-fault"} offset 10m)'
)
"""A node-fault Xid in the last 10 minutes. The agent's counter for an Xid appears with its first
event, already at 1, and increase() sees no rise in a series' first sample (a real Prometheus
showed it: the first Xid 79 never fired), so a series new in the last 10 minutes counts too."""
COLLECTOR_SCRAPE_FAILING = (
    'sum without (reason) (rate(gpucloud_collector_scrape_failures_total[5m])) '
    '>= on (project, group, instance_id, instance_type, target) 0.5 * rate(gpucloud_collector_scrapes_total[5m])'
)
"""Half or more of the node collector's scrapes of the watch failing (gpucloud.node.collector)."""


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def _prices(settings: StackSettings) -> list[dict[str, Any]]:
    """A constant series per instance type the groups list, with its on-demand price in the stack's
    region (the plan's catalog, each row with its source): what `gpucloud:group_cost_usd_per_hour`
    multiplies by. One rule, the series joined by `or` (one record name may have one rule)."""
    catalog = load_catalog()
    series = []
    for name in sorted({name for group in settings.config.groups for name in group.instance_types}):
        try:
            price = catalog.instance(name, settings.region).usd_per_hour
        except PricingError:
            continue
        series.append(f'label_replace(vector({price:g}), "instance_type", "{name}", "", "")')
    return [{"record": "gpucloud:instance_price_usd_per_hour", "expr": " or ".join(series)}] if series else []


def recording_rules(settings: StackSettings) -> list[dict[str, Any]]:
    return [
        *_prices(settings),
        {"record": "gpucloud:group_gpu_utilization:avg", "expr": "avg by (group) (DCGM_FI_DEV_GPU_UTIL)"},
        {"record": "gpucloud:group_gpus:count", "expr": "count by (group) (DCGM_FI_DEV_GPU_UTIL)"},
        {"record": "gpucloud:group_instances:count",
         "expr": "count by (group, instance_type) (count by (group, instance_id, instance_type) (DCGM_FI_DEV_GPU_UTIL))"},
        {"record": "gpucloud:group_cost_usd_per_hour",
         "expr": "sum by (group) (gpucloud:group_instances:count * on (instance_type) group_left "
                 "gpucloud:instance_price_usd_per_hour)"},
    ]


def alerting_rules(settings: StackSettings) -> list[dict[str, Any]]:
    monitoring = settings.config.monitoring
    base = settings.name_base
    rules = [
        _alert("GpuTemperatureHigh", f"DCGM_FI_DEV_GPU_TEMP >= {monitoring.temperature_threshold_c}", "5m", "warning",
               "GPU {{ $labels.gpu }} of {{ $labels.instance_id }} runs at {{ $value }} °C",
               f"At or above {monitoring.temperature_threshold_c} °C for 5 minutes the GPU throttles and ages faster. "
               "Check the job's power settings and whether other GPUs of the instance are hot too; if only this one is, "
               "drain the node and let it be replaced."),
        _alert("GpuXidNodeFault", XID_NODE_FAULT, "0m", "critical",
               "Xid {{ $labels.xid }} on GPU {{ $labels.gpu }} of {{ $labels.instance_id }}",
               "NVIDIA's catalog answers this Xid with a GPU reset or a machine restart. The node agent drains the node "
               "and marks it Unhealthy (unless health.replace is off or the breaker is open); check that a replacement "
               "came up, and report repeated Xids on one instance type to AWS."),
        _alert("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE == 1", "0m", "critical",
               "GPU {{ $labels.gpu }} of {{ $labels.instance_id }} failed to remap memory rows",
               "The GPU has memory it cannot repair: its results can no longer be trusted. The node is replaced; "
               "if it is not (breaker, health.replace off), drain it and terminate the instance."),
        _alert("GpuRowRemapPending", "gpucloud_row_remap_pending == 1", "30m", "warning",
               "GPU {{ $labels.gpu }} of {{ $labels.instance_id }} has rows waiting to be remapped",
               "A GPU reset applies the remap. Let the job checkpoint, then restart the node, or let the group "
               "replace it at its next scale-in."),
        _alert("GpuUncorrectableEcc", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0", "0m", "critical",
               "Uncorrectable ECC errors on GPU {{ $labels.gpu }} of {{ $labels.instance_id }}",
               "Double-bit errors corrupt what the GPU computes. Restart the job from its last checkpoint; the node "
               "agent replaces the node on the Xid 48 or 95 that comes with them."),
        _alert("GpuMissing", "gpucloud_gpus_visible < gpucloud_gpus_expected", "2m", "critical",
               "{{ $labels.instance_id }} shows {{ $value }} GPUs, fewer than its type has",
               "A GPU fell off the bus or its driver lost it. The node agent replaces the node; until then no job "
               "should be scheduled there."),
        _alert("GpusIdle",
               f"gpucloud:group_gpu_utilization:avg < {monitoring.idle_utilization_percent:g}",
               f"{monitoring.idle_minutes}m", "warning",
               "Group {{ $labels.group }} has idled its GPUs for " + f"{monitoring.idle_minutes} minutes",
               "The instances run and bill while their GPUs do nothing: scale the group in, set an idleShutdown, or "
               "check that the job's data loading is not stalled."),
        _alert("NodeReplaced", 'increase(gpucloud_node_fault_actions_total{outcome="replaced"}[1h]) > 0', "0m", "info",
               "{{ $labels.instance_id }} in {{ $labels.group }} was marked Unhealthy and is being replaced",
               "For the record: check the instance's Xid and the replacement's health."),
        _alert("ReplacementBreakerOpen", 'increase(gpucloud_node_fault_actions_total{outcome="held"}[1h]) > 0', "0m",
               "critical", "The replacement breaker of {{ $labels.group }} is open",
               "More nodes faulted in the last hour than health.maxReplacementsPerHour allows, so this one stays in "
               "service, marked only. Suspect the image or driver rollout before the GPUs: compare the faulted nodes' "
               "AMI and driver, roll back, then replace the marked nodes."),
        _alert("RemoteWriteBehind", "gpucloud_remote_write_pending_samples > 0", "15m", "warning",
               "The collector on {{ $labels.instance_id }} has had samples waiting for 15 minutes ({{ $value }} now)",
               "Each scrape finds samples of earlier ones not yet accepted: the workspace throttles or fails the "
               "node's requests (gpucloud_remote_write_failures_total says which), and past 50,000 waiting samples "
               "the oldest are dropped. Check the workspace's ingestion quotas, the node role's aps:RemoteWrite "
               "permission and the node's way out (NAT or the aps-workspaces endpoint). A node whose requests all "
               "fail shows here only once they pass again, as its readings go quiet meanwhile."),
        _alert("RemoteWriteSamplesDropped", "increase(gpucloud_remote_write_dropped_samples_total[1h]) > 0", "0m",
               "warning",
               "The collector on {{ $labels.instance_id }} gave up on samples ({{ $labels.reason }})",
               "Readings of this node are missing from the workspace. rejected: the workspace refused a request "
               "(a 4xx other than 429: the node's journal, `journalctl -u gpucloud-node-collect`, has its answer; "
               "403 is the node role lacking aps:RemoteWrite). queue_full: the workspace could not be reached "
               "long enough for the queue to fill; see RemoteWriteBehind for why."),
        _alert("CollectorScrapesFailing", COLLECTOR_SCRAPE_FAILING, "10m", "warning",
               "The collector on {{ $labels.instance_id }} cannot read the node agent's readings",
               "The GPU alerts of this node are blind while it lasts. gpucloud_collector_scrape_failures_total's "
               "reason says why. unreachable: the watch is down or restarting (`systemctl status gpucloud-node-watch`, its journal says why); invalid: the watch "
               "writes text the collector refuses (an agent bundle of mismatched versions); http: something else "
               "answers on 127.0.0.1:9835."),
    ]
    for group in settings.config.groups:
        name = autoscaling_group_name(base, group.name)
        minutes = group.health.throttle_minutes
        rules.append(_alert(
            "GpuSlowdownSustained", f'max by (group, instance_id, gpu, reason) (gpucloud_gpu_slowdown{{group="{name}"}}) == 1',
            f"{minutes}m", "warning",
            "GPU {{ $labels.gpu }} of {{ $labels.instance_id }} slowed down ({{ $labels.reason }})",
            f"Thermal or power-brake slowdown for {minutes} minutes (health.throttleMinutes of {group.name}): the job "
            "runs slower than it should. The node is not replaced for it; check cooling reports and power caps, "
            "and move the job if one node lags its peers.",
        ))
    return rules


def rule_file(settings: StackSettings, interval: str = "1m") -> dict[str, Any]:
    """A Prometheus rule file (and an AMP rule groups namespace's data) for the stack, its groups
    evaluated every `interval` (the node agent's readings change once a minute by default)."""
    return {"groups": [
        {"name": f"{RULE_GROUP}-recording", "interval": interval, "rules": recording_rules(settings)},
        {"name": f"{RULE_GROUP}-alerts", "interval": interval, "rules": alerting_rules(settings)},
    ]}


def rule_file_text(settings: StackSettings, interval: str = "1m") -> str:
    """The rule file as YAML: what `gpucloud observability export` writes and the stack's AMP
    rule groups namespace holds."""
    return yaml.safe_dump(rule_file(settings, interval), sort_keys=False)
