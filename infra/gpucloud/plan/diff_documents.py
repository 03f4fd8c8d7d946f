"""What changed inside a JSON document a resource holds as a string (an IAM or key policy, a
dashboard body), so a reviewer reads statements, not two strings cut short.

A policy's statements are matched by `Sid`, then by content, then by effect and principal with an
action in common; each is added, removed or changed. What a change grants beyond the base
is its widening: actions, resources, principals or condition values an Allow newly covers (an action
wildcard is expanded through parliament's copy of the Service Authorization Reference, so `kms:Get*`
newly covering `kms:GetKeyPolicy` is named; a NotAction statement covers every action but those it
names), a condition an Allow no longer has, or what a Deny no longer denies (a Deny removed or
narrower, or its condition holding for fewer requests). IAM evaluation: "Policy evaluation logic"
and "IAM JSON policy elements: Action, Resource, Principal, Condition" (IAM user guide, read
2026-11-28): an explicit Deny wins, Allow statements add up, and each condition must hold, so more
values per key of a matching operator (fewer of a negated one) is a wider grant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from gpucloud.plan.diff_model import leaf_changes

_SHOWN_ACTIONS = 4


@dataclass
class StatementChange:
    """One statement added, removed or changed, with the fields that differ and what it widens."""

    kind: str
    label: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    fields: list[str] = field(default_factory=list)
    widened: list[str] = field(default_factory=list)


def parsed(value: Any) -> Any | None:
    """A JSON object held as a string, parsed; None for anything else."""
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        document = json.loads(value)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def is_policy(document: Any) -> bool:
    return isinstance(document, dict) and "Statement" in document


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    statements = document.get("Statement") or []
    return [statements] if isinstance(statements, dict) else [item for item in statements if isinstance(item, dict)]


def _values(statement: dict[str, Any] | None, key: str) -> list[str]:
    value = (statement or {}).get(key)
    if value is None:
        return []
    if isinstance(value, dict):
        return [f"{kind}:{item}" for kind, items in value.items() for item in ([items] if isinstance(items, str) else items)]
    return [value] if isinstance(value, str) else [str(item) for item in value]


def _conditions(statement: dict[str, Any] | None) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for operator, keys in ((statement or {}).get("Condition") or {}).items():
        for key, value in (keys or {}).items():
            found[f"{operator} {key}"] = [json.dumps(value)] if isinstance(value, (bool, int)) else _values({"v": value}, "v")
    return found


def _label(statement: dict[str, Any], index: int) -> str:
    return statement.get("Sid") or f"statement {index + 1}"


def _pairs(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[tuple[int | None, int | None]]:
    """Old and new statements paired: by Sid, then identical, then alike (same effect and principal,
    an action in common); the rest stand alone."""
    pairs: list[tuple[int | None, int | None]] = []
    left, right = list(range(len(old))), list(range(len(new)))
    alike = (
        lambda a, b: bool(a.get("Sid")) and a.get("Sid") == b.get("Sid"),
        lambda a, b: a == b,
        lambda a, b: a.get("Effect") == b.get("Effect") and a.get("Principal") == b.get("Principal")
        and bool(set(_values(a, "Action")) & set(_values(b, "Action"))),
    )
    for same in alike:
        for i in list(left):
            j = next((j for j in right if same(old[i], new[j])), None)
            if j is not None:
                pairs.append((i, j))
                left.remove(i)
                right.remove(j)
    return pairs + [(i, None) for i in left] + [(None, j) for j in right]


def _covered(pattern: str, patterns: list[str]) -> bool:
    return any(fnmatchcase(pattern.lower(), other.lower()) for other in patterns)


def _new_actions(new: list[str], old: list[str]) -> list[str]:
    """Action patterns of `new` that cover actions none of `old` covers, each with what it adds."""
    from gpucloud.policy.iam_lint import actions_matching

    found = []
    for pattern in new:
        if _covered(pattern, old):
            continue
        if "*" not in pattern and "?" not in pattern:
            found.append(pattern)
            continue
        added = sorted(action for action in actions_matching(pattern) if not _covered(action, old))
        if added or not actions_matching(pattern):
            more = f", +{len(added) - _SHOWN_ACTIONS} more" if len(added) > _SHOWN_ACTIONS else ""
            found.append(f"{pattern} (newly covers {', '.join(added[:_SHOWN_ACTIONS])}{more})" if added else pattern)
    return found


def _widening(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """What `new` grants beyond `old` (an Allow gained or wider), or no longer denies (a Deny
    removed or narrower)."""
    if new is not None and new.get("Effect") == "Allow":
        base = old if old is not None and old.get("Effect") == "Allow" else None
        return _wider_with_conditions(base, new, _ALLOW_WORDS)
    if old is not None and old.get("Effect") == "Deny":
        base = new if new is not None and new.get("Effect") == "Deny" else None
        return [f"no longer denies: {item}" for item in _wider_with_conditions(base, old, _DENY_WORDS)]
    return []


def _wider_with_conditions(base: dict[str, Any] | None, statement: dict[str, Any], words: dict[str, str]) -> list[str]:
    """`_wider`, then each condition of `statement` that holds where `base`'s does not, in `words`."""
    looser = _looser_conditions(base, statement) if base is not None else []
    return [*_wider(base, statement),
            *(f"condition {key} {words[kind]}{', '.join(values)}" for kind, key, values in looser)]


_ALLOW_WORDS = {"missing": "removed", "more": "also allows ", "fewer": "no longer excludes "}
_DENY_WORDS = {"missing": "added", "more": "no longer covers ", "fewer": "now excludes "}
"""How a condition that holds for more requests reads: in an Allow, the new statement's condition is
looser than the old one's; in a Deny, the old statement's is looser than the new one's."""


def _wider(base: dict[str, Any] | None, statement: dict[str, Any]) -> list[str]:
    found = []
    actions = _values(statement, "Action")
    new_actions = _new_actions(actions, _values(base, "Action")) if base is not None else actions
    if new_actions:
        found.append("actions " + ", ".join(new_actions))
    for key, word in (("Resource", "resources"), ("Principal", "principals")):
        before = _values(base, key)
        if added := [item for item in _values(statement, key) if base is None or not _covered(item, before)]:
            found.append(f"{word} " + ", ".join(added))
    return found + _not_actions(base, statement)


def _not_actions(base: dict[str, Any] | None, statement: dict[str, Any]) -> list[str]:
    """A NotAction statement covers every action but those it names: it is wider than a base
    without NotAction, and wider than one with NotAction by each action it no longer names."""
    excluded = _values(statement, "NotAction")
    if not excluded:
        return []
    if base is None or "NotAction" not in base:
        return ["every action except " + ", ".join(excluded)]
    removed = [item for item in _values(base, "NotAction") if item not in excluded]
    return ["no longer excluded: " + ", ".join(removed)] if removed else []


def _looser_conditions(strict: dict[str, Any], loose: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """Where `loose`'s conditions hold and `strict`'s do not: a condition `strict` has and `loose`
    lacks ("missing"), a value `loose` adds to a matching operator ("more"), or a value it drops
    from a negated one, whose values are NORed ("fewer"). IAM user guide, "Conditions with multiple
    context keys or values" (read 2026-11-29): operators and keys are ANDed, a matching operator's
    values ORed, a negated matching operator's (`StringNotEquals`, `ArnNotLike`, `NotIpAddress`...)
    NORed."""
    before, after = _conditions(strict), _conditions(loose)
    found: list[tuple[str, str, list[str]]] = []
    for key, values in before.items():
        if key not in after:
            found.append(("missing", key, []))
        elif "Not" in key.partition(" ")[0]:
            if dropped := [item for item in values if item not in after[key]]:
                found.append(("fewer", key, dropped))
        elif added := [item for item in after[key] if item not in values]:
            found.append(("more", key, added))
    return found


def statement_changes(old: dict[str, Any], new: dict[str, Any]) -> list[StatementChange]:
    """The statements of two policy documents that differ, in the new document's order."""
    before, after = _statements(old), _statements(new)
    changes = []
    for i, j in sorted(_pairs(before, after), key=lambda pair: (pair[1] is None, pair[1] or 0, pair[0] or 0)):
        first, second = (before[i] if i is not None else None), (after[j] if j is not None else None)
        if first == second:
            continue
        if first is None or second is None:
            kind, label = ("added", _label(second, j)) if second is not None else ("removed", _label(first, i))  # type: ignore[arg-type]
            changes.append(StatementChange(kind, label, first, second, widened=_widening(first, second)))
            continue
        fields = sorted(key for key in set(first) | set(second) if first.get(key) != second.get(key))
        changes.append(StatementChange("changed", _label(second, j), first, second, fields, _widening(first, second)))  # type: ignore[arg-type]
    if old.get("Version") != new.get("Version"):
        changes.append(StatementChange("changed", "Version", None, None, [f"{old.get('Version')} => {new.get('Version')}"]))
    return changes


def document_lines(old: dict[str, Any], new: dict[str, Any], limit: int = 20) -> list[str]:
    """A changed JSON document as lines: a policy by statement, any other by changed leaf."""
    if is_policy(old) and is_policy(new):
        return [line for change in statement_changes(old, new) for line in _statement_lines(change)]
    lines = [f"~ {path}: {_short(before)} => {_short(after)}" for path, before, after in leaf_changes(old, new)]
    return lines if len(lines) <= limit else [*lines[:limit], f"... and {len(lines) - limit} more changed values"]


def _statement_lines(change: StatementChange) -> list[str]:
    if change.kind == "changed" and change.old is None:
        return [f"~ {change.label}: {change.fields[0]}"]
    shown = change.new if change.new is not None else change.old
    actions = _values(shown, "Action")
    covered = ", ".join(actions) if actions else "every action except " + ", ".join(_values(shown, "NotAction"))
    summary = f"{shown.get('Effect')} {covered}"  # type: ignore[union-attr]
    if change.kind == "changed":
        lines = [f"~ {change.label} ({summary}):"]
        for key in change.fields:
            lines.append(f"    {key}: {_short(change.old.get(key))} => {_short(change.new.get(key))}")  # type: ignore[union-attr]
    else:
        lines = [f"{'+' if change.kind == 'added' else '-'} {change.label}: {summary} on {', '.join(_values(shown, 'Resource')) or '-'}"]
    lines.extend(f"    widens: {item}" for item in change.widened)
    return lines


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
