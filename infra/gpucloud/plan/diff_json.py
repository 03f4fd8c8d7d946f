"""A stack change in the layout of `pulumi preview --json`, so scripts read both alike."""

from __future__ import annotations

import re
from typing import Any

from gpucloud.plan.change_order import DELETE_FIRST, replacement_order
from gpucloud.plan.diff import PlanDiff
from gpucloud.plan.diff_documents import document_lines, parsed
from gpucloud.testing import AppliedResource


def _state(resource: AppliedResource, stack_urn: str) -> dict[str, Any]:
    state: dict[str, Any] = {"urn": resource.urn, "custom": resource.custom, "type": resource.type,
                             "parent": resource.parent or stack_urn, "inputs": resource.inputs,
                             "outputs": resource.state if resource.custom else {}}
    if resource.id:
        state["id"] = resource.id
    return state


def to_preview_json(diff: PlanDiff) -> dict[str, Any]:
    """The diff in the layout of `pulumi preview --json`: steps for each resource that changes
    (three for a replacement), with `oldState`/`newState`, `diffReasons`, `replaceReasons` and
    `detailedDiff`, and a changed JSON document's lines under `gpucloudDocumentChanges`; unchanged
    resources are only counted (`changeSummary.same`)."""
    stack_urn = diff.current.stack_urn
    steps = []
    for change in diff.changes:
        if change.op == "same":
            continue
        step: dict[str, Any] = {"op": change.op, "urn": change.urn}
        if change.old is not None:
            step["oldState"] = _state(change.old, stack_urn)
        if change.new is not None:
            step["newState"] = _state(change.new, stack_urn)
        if change.changes:
            step["diffReasons"] = sorted({re.split(r"[.\[]", item.path, maxsplit=1)[0] for item in change.changes})
            step["detailedDiff"] = {item.path: {"kind": item.kind, "inputDiff": True} for item in change.changes}
            documents = {item.path: (parsed(item.old), parsed(item.new)) for item in change.changes}
            if changed := {path: document_lines(old, new) for path, (old, new) in documents.items()
                           if old is not None and new is not None}:
                step["gpucloudDocumentChanges"] = changed
        if change.replace_reasons:
            step["replaceReasons"] = sorted({re.split(r"[.\[]", item.path, maxsplit=1)[0] for item in change.replace_reasons})
        if change.may_replace:
            step["gpucloudMayReplace"] = [item.path for item in change.may_replace]
        if change.ignored:
            step["gpucloudIgnoredChanges"] = [item.path for item in change.ignored]
        if change.refused:
            step["gpucloudRefused"] = [item.path for item in change.refused]
        if change.op == "replace":
            # A replacement is the trio `pulumi preview --diff` prints (pulumi/pulumi#1824, #8185):
            # the new resource, the swap, then the old one deleted; delete-first, the old one goes first.
            order = replacement_order(change)
            step["gpucloudReplaceOrder"] = order.order
            trio = [{**step, "op": "create-replacement"}, step, {**step, "op": "delete-replaced"}]
            steps.extend(reversed(trio) if order.order == DELETE_FIRST else trio)
            continue
        steps.append(step)
    document: dict[str, Any] = {
        "steps": steps,
        "changeSummary": diff.summary,
        "base": diff.base_label,
        "findings": [{key: value for key, value in vars(finding).items() if value is not None} for finding in diff.findings],
        "policyViolations": [
            {"policyName": violation.policy_name, "enforcementLevel": violation.enforcement_level,
             "urn": violation.urn, "message": violation.message}
            for violation in diff.current.policy_violations
        ],
    }
    if diff.monthly_cost:
        document["costDifference"] = {"currency": "USD", **diff.monthly_cost}
    return document
