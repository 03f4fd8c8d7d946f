"""What a reviewer of a stack change must not miss: data or identity replaced or deleted (a
mandatory violation unless the stack file says it is intended), an Auto Scaling group replaced or
deleted, a launch template change that rolls every node, each with the nodes it touches, an update
AWS refuses, a policy document that grants more than the base did, and what the order Pulumi
applies the change in breaks (`change_order`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpucloud.plan.change_order import order_findings
from gpucloud.plan.diff_documents import is_policy, parsed, statement_changes
from gpucloud.plan.diff_model import DATA_RESOURCES, GROUP_TYPE
from gpucloud.plan.model import PlanFinding

if TYPE_CHECKING:
    from gpucloud.plan.diff_model import PlanDiff, ResourceChange

INTENDED_KEY = "gpu-cloud:intendedReplacements"


def shown(value: Any) -> str:
    """A property value in one line, as the diff prints it."""
    text = value if isinstance(value, str) and value.startswith("(") else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


def cause(change: ResourceChange) -> str:
    """Why a resource is replaced or deleted, in one clause."""
    if change.op == "delete":
        return "it is no longer in the program of the changed stack file (a renamed or removed group or setting)"
    reasons = change.replace_reasons
    first = reasons[0]
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"{first.path} {shown(first.old)} -> {shown(first.new)} forces it: {first.reason}{more}"


def _guards(change: ResourceChange) -> str:
    old = change.old
    notes = []
    if old is not None and old.protect:
        notes.append("it is protected, so `pulumi up` stops until it is unprotected")
    if old is not None and old.retain_on_delete:
        notes.append("it is retained on delete, so the old one stays in the account outside the stack")
    return ("; " + " and ".join(notes)) if notes else ""


def nodes_of(inputs: dict[str, Any]) -> int:
    """The nodes a group runs per the stack file: its desired capacity, else its minimum."""
    desired = inputs.get("desiredCapacity")
    return int(desired if desired is not None else inputs.get("minSize") or 0)


def _rolls_every_node(change: ResourceChange) -> list[str]:
    """The launch templates whose new versions the group's instance refresh rolls out.

    The provider starts an instance refresh whenever the group's launch_template or
    mixed_instances_policy changes, and not for a `$Latest` version, which never changes
    (terraform-provider-aws website/docs/r/autoscaling_group.html.markdown, `instance_refresh`
    `triggers`, read 2026-11-25); gpu-cloud names each template's latest version explicitly."""
    if change.op != "update" or not (change.new and change.new.inputs.get("instanceRefresh")):
        return []
    return sorted({item.new.rsplit("new version of ", 1)[1].rstrip(")") for item in change.changes
                   if item.path.endswith("version") and isinstance(item.new, str) and "new version of" in item.new})


def _widened_grants(change: ResourceChange) -> list[PlanFinding]:
    """A warning per policy document the change widens, naming each statement and what it adds.

    A warning, not a failure: a wider grant is often the point of the change (a new prefix to
    write), it can be narrowed again by the next change, and the changed stack's own gate already
    fails a grant that is too wide in itself (parliament's lint, the stack rules); a failure here
    would need an escape hatch like intendedReplacements for every new grant."""
    found = []
    for item in change.changes:
        old, new = parsed(item.old), parsed(item.new)
        if not is_policy(new):
            continue
        widened = [f"{statement.label}: {'; '.join(statement.widened)}"
                   for statement in statement_changes(old if is_policy(old) else {}, new) if statement.widened]
        if widened:
            found.append(PlanFinding("diff", "warning", "grant-widened",
                                     f"{change.name} ({change.type}): {item.path} grants more than the base: "
                                     f"{' | '.join(widened)}", change.urn))
    return found


def diff_findings(diff: PlanDiff, intended: tuple[str, ...]) -> list[PlanFinding]:
    """The findings of a diff, in the order of its changes; intended entries the change does not
    need are warned about, so a stale one does not wave through a later replacement."""
    found: list[PlanFinding] = []
    used: set[str] = set()
    created_by_type: dict[str, list[str]] = {}
    for change in diff.of("create"):
        created_by_type.setdefault(change.type, []).append(change.name)
    for change in diff.changes:
        verb = "replaced" if change.op == "replace" else "deleted"
        if change.op in ("replace", "delete") and change.type in DATA_RESOURCES:
            what = f"{change.name} ({change.type}) is {verb}: {cause(change)}; it is {DATA_RESOURCES[change.type]}{_guards(change)}"
            if change.name in intended:
                used.add(change.name)
                found.append(PlanFinding("diff", "info", "intended-replacement",
                                         f"{what} (intended: listed under {INTENDED_KEY})", change.urn))
            else:
                found.append(PlanFinding("diff", "failure", "data-replaced",
                                         f"{what}. If that is intended, list {change.name} under {INTENDED_KEY} "
                                         "in the stack file", change.urn))
        if change.type == GROUP_TYPE and change.op in ("replace", "delete") and change.old is not None:
            nodes = nodes_of(change.old.inputs)
            successors = created_by_type.get(GROUP_TYPE, [])
            instead = f"; {', '.join(successors)} is created in its place and starts empty" if successors else ""
            found.append(PlanFinding("diff", "warning", "group-replaced",
                                     f"{change.name} is {verb}: {cause(change)}; its {nodes} running node(s) (desired "
                                     f"capacity {nodes} in the base) are terminated{instead}", change.urn))
        templates = _rolls_every_node(change)
        if templates and change.new is not None:
            nodes = nodes_of(change.new.inputs)
            found.append(PlanFinding("diff", "warning", "rolling-refresh",
                                     f"{change.name}: {', '.join(templates)} change(s), and the group's instance refresh replaces "
                                     f"every node with the new version: {nodes} node(s) at desired capacity {nodes}, "
                                     f"up to maxSize {change.new.inputs.get('maxSize')}", change.urn))
        for item in change.refused:
            found.append(PlanFinding("diff", "failure", "update-refused",
                                     f"{change.name} ({change.type}): {item.path} {shown(item.old)} -> {shown(item.new)} "
                                     f"cannot be applied: {item.reason}", change.urn))
        found.extend(_widened_grants(change))
        if change.may_replace:
            paths = ", ".join(item.path for item in change.may_replace)
            found.append(PlanFinding("diff", "warning", "may-replace",
                                     f"{change.name} ({change.type}) may be replaced: {paths} changes and "
                                     f"{change.may_replace[0].reason}", change.urn))
    found.extend(order_findings(diff))
    for name in intended:
        if name not in used:
            found.append(PlanFinding("diff", "warning", "intended-replacement-unused",
                                     f"{INTENDED_KEY} lists {name}, which this change neither replaces nor deletes: "
                                     "remove it, or it will let a later replacement through unreviewed"))
    return found
