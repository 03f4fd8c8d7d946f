"""A stack change as a reviewer reads it, in the shape of `pulumi preview --diff`: one line per
resource that changes, its changed properties old => new, what forces a replacement, then the
counts, the findings and what the change does to the monthly cost."""

from __future__ import annotations

import difflib
from typing import Any

from rich.console import Console
from rich.text import Text

from gpucloud.plan.change_order import DELETE_FIRST, replacement_order
from gpucloud.plan.diff import PlanDiff, ResourceChange
from gpucloud.plan.diff_documents import document_lines, parsed
from gpucloud.plan.diff_findings import shown

SYMBOLS = {"create": ("+", "green"), "update": ("~", "yellow"), "replace": ("+-", "magenta"), "delete": ("-", "red")}
WORDS = {"create": "to create", "update": "to update", "replace": "to replace", "delete": "to delete"}


def _heading(change: ResourceChange) -> Text:
    symbol, style = SYMBOLS[change.op]
    line = Text(f"{symbol:>2} {change.type}: ({change.op}) ", style=style) + Text(change.name, style="bold")
    if change.replace_reasons:
        first = "  (delete first)" if replacement_order(change).order == DELETE_FIRST else ""
        line += Text(f"  [replace: {', '.join(item.path for item in change.replace_reasons)}]{first}", style="magenta")
    elif change.may_replace:
        line += Text(f"  [MAY REPLACE: {', '.join(item.path for item in change.may_replace)}]", style="bold magenta")
    return line


def _property_lines(change: ResourceChange) -> list[Text]:
    lines = []
    for item in change.changes:
        symbol = "+" if item.old is None else "-" if item.new is None else "~"
        old_document, new_document = parsed(item.old), parsed(item.new)
        documents = old_document is not None and new_document is not None
        texts = None if documents else _text_lines(item.old, item.new)
        values = ("JSON document changed:" if documents else "document changed:" if texts is not None
                  else f"{shown(item.old)} => {shown(item.new)}")
        text = Text(f"      {symbol} {item.path}: {values}")
        if item.forces_replacement:
            text += Text(f"  (forces replacement: {item.reason})", style="magenta")
        elif item.may_replace:
            text += Text(f"  (may replace: {item.reason})", style="bold magenta")
        elif item.refused:
            text += Text(f"  (refused: {item.reason})", style="bold red")
        lines.append(text)
        if documents:
            lines.extend(Text(f"          {line}", style="yellow" if "widens:" in line else "")
                         for line in document_lines(old_document, new_document))
        lines.extend(Text(f"          {line}") for line in texts or ())
    for item in change.ignored:
        lines.append(Text(f"        {item.path}: {shown(item.old)} => {shown(item.new)}  (ignored: ignoreChanges)", style="dim"))
    return lines


def _text_lines(old: Any, new: Any, limit: int = 20) -> list[str] | None:
    """The changed lines of a text of several lines (a launch template's user data, which the diff
    compares decoded), without context, at most `limit`; None for anything else."""
    if not (isinstance(old, str) and isinstance(new, str) and "\n" in old and "\n" in new):
        return None
    changed = [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
               if not line.startswith(("---", "+++", "@@"))]
    return changed[:limit] + ([f"... {len(changed) - limit} more changed lines"] if len(changed) > limit else [])


def render_diff(diff: PlanDiff, console: Console) -> None:
    current = diff.current
    console.print(f"Previewing update ([bold]{current.stack}[/bold]) on the moto engine: offline, {current.region}; "
                  f"{diff.base_label} => {diff.current_label}, nothing is deployed\n", soft_wrap=True)
    for change in diff.changes:
        if change.op == "same":
            continue
        console.print(_heading(change), soft_wrap=True)
        for line in _property_lines(change):
            console.print(line, soft_wrap=True)
    summary = diff.summary
    console.print("\nResources:")
    for op in ("create", "update", "replace", "delete"):
        if summary.get(op):
            symbol, style = SYMBOLS[op]
            console.print(Text(f"    {symbol} {summary[op]} {WORDS[op]}", style=style))
    console.print(f"    {summary.get('same', 0)} unchanged")
    cost = diff.monthly_cost
    if cost:
        console.print("\nMonthly cost (USD, on-demand and spot list prices, 730 h):")
        for scenario in ("min", "desired", "max"):
            before, after, change = cost["base"][scenario], cost["current"][scenario], cost["difference"][scenario]
            console.print(f"    {scenario:<8} {before:>12,.2f} => {after:>12,.2f}   ({change:+,.2f})")
    findings = [*diff.findings, *(finding for finding in current.findings if finding.severity != "info")]
    if current.policy_violations:
        console.print("\nPolicy Violations (of the changed stack):")
        for violation in current.policy_violations:
            style = "bold red" if violation.mandatory else "yellow"
            console.print(Text(f"    [{violation.enforcement_level}]  {violation.policy_name}: ", style=style)
                          + Text(violation.message), soft_wrap=True)
    if findings:
        console.print("\nFindings:")
        for finding in findings:
            style = {"failure": "bold red", "warning": "yellow"}.get(finding.severity, "")
            console.print(Text(f"    {finding.severity} [{finding.source}: {finding.rule}]: ", style=style) + Text(finding.message),
                          soft_wrap=True)
