"""The rules on applying a change that are not ForceNew, as data (`data/change_rules.json`): the
order Pulumi runs a replacement, the values only one live resource may hold, the references that
stop a deletion, and the one-way changes the provider turns into a replacement or AWS refuses,
decided from the old and new values."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpucloud.testing.provider_rules import values_at

RULES_PATH = Path(__file__).resolve().parent.parent / "data" / "change_rules.json"


@cache
def change_rules() -> dict[str, Any]:
    """The whole document, read once."""
    return json.loads(RULES_PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class OneWay:
    """What a one-way rule makes of one property change: `replaces` or `refused`, or `may replace`
    where the values do not decide it (a value known only after apply)."""

    outcome: str
    reason: str


def _value_at(inputs: dict[str, Any], path: str) -> Any:
    return next((value for _, value in values_at(inputs, path)), None)


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.startswith(("(known after apply", "${")))


def _direction(rule: dict[str, Any], old: Any, new: Any) -> bool | None:
    """Whether old -> new is the move the rule is about; None where the values cannot tell."""
    if not (_known(old) and _known(new)):
        return None
    if "from" in rule and (old not in rule["from"] or new not in rule["to"]):
        return False
    if rule["when"] == "change":
        return old != new
    if rule.get("compare") == "string":
        old, new = str(old), str(new)
    elif not (isinstance(old, (int, float)) and isinstance(new, (int, float))):
        return None
    return new < old if rule["when"] == "decrease" else new > old


def _applies_where(rule: dict[str, Any], inputs: dict[str, Any]) -> bool:
    where = rule.get("where")
    if not where:
        return True
    value = _value_at(inputs, where["path"])
    if "in" in where:
        return value in where["in"]
    return value not in where["notIn"]


def one_way(resource_type: str, path: str, old: Any, new: Any, inputs: dict[str, Any]) -> OneWay | None:
    """The first one-way rule that this change of `path` (in the rules' `[]` form) meets, given the
    resource's new inputs for the rules' conditions; `may replace` where the values cannot tell
    whether a replacing rule applies; None where none applies."""
    undecided = None
    for rule in change_rules()["oneWay"]:
        if rule["type"] != resource_type or rule["path"] != path or not _applies_where(rule, inputs):
            continue
        moved = _direction(rule, old, new)
        if moved:
            return OneWay(rule["outcome"], f"{rule['why']} ({rule['source']}, read {change_rules()['read']})")
        if moved is None and undecided is None and rule["outcome"] == "replaces":
            undecided = OneWay("may replace", f"{rule['why']}; the values do not tell whether this change does ({rule['source']})")
    return undecided


def may_be_one_way(resource_type: str, path: str) -> OneWay | None:
    """For a change whose values are not given: the rule that may turn it into a replacement."""
    for rule in change_rules()["oneWay"]:
        if rule["type"] == resource_type and rule["path"] == path and rule["outcome"] == "replaces":
            return OneWay("may replace", f"{rule['why']} ({rule['source']})")
    return None
