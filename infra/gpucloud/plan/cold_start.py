"""Each group's cold-start budget in the plan: a line per group, `coldStart` in `--json`, and a
failure wherever a timer would act on a node before it can be ready
(`config.cold_start_estimate` computes it; this module words it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucloud.config import StackConfig
from gpucloud.config.cold_start_estimate import DEFAULT_GRACE_PERIOD_SECONDS, ColdStartBudget, budget
from gpucloud.plan.model import PlanFinding

RULE = "cold-start-budget"


def cold_start(config: StackConfig, instance_stores: Mapping[str, bool],
               image_bytes: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """One entry per group: its phases, the timers compared with them, the fixes and what was not counted.
    `instance_stores`: whether every type of the group has instance-store disks (for /scratch);
    `image_bytes`: the ECR facts' image sizes (`plan/cold_start_snapshot.py`), for images the
    stack file gives no imageSizeGiB. The grace period's default follows the stack file alone, as
    `pulumi up` has no facts: write imageSizeGiB to make it count the pull."""
    sizes = {image: size / 2**30 for image, size in (image_bytes or {}).items()}
    return [_entry(budget(config, index, instance_stores.get(group.name, False), sizes))
            for index, group in enumerate(config.groups)]


def _entry(found: ColdStartBudget) -> dict[str, Any]:
    return {
        "group": found.group,
        "path": found.path,
        "phases": [{"phase": phase.name, "seconds": round(phase.seconds, 1), "basis": phase.basis}
                   for phase in found.phases],
        "inServiceSeconds": round(found.in_service_seconds, 1),
        "servingSeconds": round(found.serving_seconds, 1),
        "timers": [{"name": timer.name, "key": timer.key, "limitSeconds": timer.limit_seconds,
                    "neededSeconds": round(timer.needed_seconds, 1), "source": timer.source, "fits": timer.fits,
                    "consequence": timer.consequence} for timer in found.timers],
        "verdict": "replaced before ready" if found.failing else "fits",
        "fixes": list(found.fixes) if found.failing else [],
        "notes": list(found.notes),
    }


def duration(seconds: float) -> str:
    """`4m30s`, `45s`, `1h05m`."""
    whole = int(round(seconds))
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    if whole >= 60:
        return f"{whole // 60}m{whole % 60:02d}s" if whole % 60 else f"{whole // 60}m"
    return f"{whole}s"


def cold_start_line(entry: Mapping[str, Any]) -> str:
    """`servers: ready ~9m after launch (boot 3m, agent 1m, gate 1m, pull 1m58s, healthy 30s, slowStart 2m);
    InService at 5m; grace period 15m (follows the estimate) covers 4m28s from InService to serving; launch hook fits`"""
    phases = ", ".join(f"{phase['phase']} {duration(phase['seconds'])}" for phase in entry["phases"])
    grace = next(timer for timer in entry["timers"] if timer["key"].endswith("healthCheckGracePeriodSeconds"))
    others = [timer for timer in entry["timers"] if timer is not grace]
    source = grace["source"]
    if source == "estimate":
        source = "default" if grace["limitSeconds"] == DEFAULT_GRACE_PERIOD_SECONDS else "follows the estimate"
    verdicts = [f"grace period {duration(grace['limitSeconds'])} ({source}) " + (
        "with nothing to start after InService" if not grace["neededSeconds"] else
        f"{'covers' if grace['fits'] else 'TOO SHORT for'} {duration(grace['neededSeconds'])} from InService to serving")]
    verdicts += [f"{timer['name']} {duration(timer['limitSeconds'])} TOO SHORT for {duration(timer['neededSeconds'])}"
                 for timer in others if not timer["fits"]]
    if all(timer["fits"] for timer in others):
        verdicts.append("launch hook fits" if len(others) == 2 else "launch hook and start periods fit")
    path = " (from the warm pool)" if entry["path"] == "warm pool" else ""
    notes = f"; {'; '.join(entry['notes'])}" if entry["notes"] else ""
    return (f"{entry['group']}: ready ~{duration(entry['servingSeconds'])} after launch{path} ({phases}); "
            f"InService at {duration(entry['inServiceSeconds'])}; {'; '.join(verdicts)}{notes}")


def cold_start_findings(entries: list[dict[str, Any]]) -> list[PlanFinding]:
    """A failure per timer that acts on a node before it can be ready, naming the keys to change."""
    findings = []
    for entry in entries:
        for timer in entry["timers"]:
            if timer["fits"]:
                continue
            grace = timer["key"].endswith("healthCheckGracePeriodSeconds")
            fixes = "; or ".join(entry["fixes"]) if grace else ""
            findings.append(PlanFinding(source="cold-start", severity="failure", rule=RULE, message=(
                f"group {entry['group']}: the {timer['name']} is {duration(timer['limitSeconds'])} ({timer['source']}) "
                f"and the node needs {duration(timer['neededSeconds'])} (estimate: --json coldStart): "
                f"{timer['consequence']}. Raise {timer['key']} to at least {_at_least(timer['neededSeconds'])}"
                + (f", or shorten the cold start: {fixes}" if fixes else ""))))
    return findings


def _at_least(seconds: float) -> int:
    return -(-int(seconds * 1.25) // 60) * 60
