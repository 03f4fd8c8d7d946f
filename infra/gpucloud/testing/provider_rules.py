"""The input rules of the terraform-provider-aws resources that pulumi-aws bridges, checked on
each resource's inputs before its handler runs.

The rules are data (`data/provider_rules.json`): per Pulumi resource type, the provider source
file they were read from and, per input property path, what the provider's schema says
(ConflictsWith, ExactlyOneOf, AtLeastOneOf, RequiredWith, its validation function, MinItems and
MaxItems, ForceNew). `pulumi preview` runs the same rules in the bridged provider and refuses the
stack before any AWS call; the offline plan refuses it too, naming the resource, the property,
the value, the rule and its source. ForceNew is not a check: it is kept for diffs (what replaces).

Enum rules that the provider takes from the AWS SDK (`enum.Validate[types.X]()`) name the
botocore shape instead of copying its values: the SDK's enums are generated from the same
service models that botocore ships.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session

RULES_PATH = Path(__file__).resolve().parent.parent / "data" / "provider_rules.json"

VALUE_RULES = ("enum", "range", "greaterThan", "multipleOf", "anyOf", "length", "pattern", "items", "type", "duration", "json")
"""Rule kinds that check a property's own value: a property with one is checked by a cited rule."""
RELATION_RULES = ("conflictsWith", "exactlyOneOf", "atLeastOneOf", "requiredWith")


@dataclass(frozen=True)
class RuleViolation:
    """One input the provider would refuse."""

    type: str
    name: str
    property: str
    value: Any
    """The value refused, or None for a rule between properties (ConflictsWith and the like)."""
    rule: str
    source: str

    @property
    def message(self) -> str:
        value = "" if self.value is None else f" = {json.dumps(self.value, default=str)}"
        return f"{self.type} {self.name!r}: {self.property}{value} breaks the provider rule {self.rule} ({self.source})"


class ProviderRulesBroken(Exception):
    """Inputs the provider refuses before any AWS call, raised when the handler fails on them too."""

    def __init__(self, violations: Sequence[RuleViolation]):
        self.violations = tuple(violations)
        super().__init__("; ".join(violation.message for violation in self.violations))


@contextmanager
def refused_first(violations: Sequence[RuleViolation]) -> Iterator[None]:
    """Around a handler. AWS's own answer to the call (a ClientError from moto or the engine's
    checks, a `ServiceModelViolation`) stays the error, noting the provider's refusal; a handler
    that fails otherwise on inputs the provider refuses (a KeyError on a block the provider
    requires) fails with the provider's reason instead."""
    from botocore.exceptions import ClientError

    from gpucloud.testing.service_model import ServiceModelViolation

    try:
        yield
    except (ClientError, ServiceModelViolation) as error:
        if violations:
            error.add_note("the provider refuses it first: " + "; ".join(violation.message for violation in violations))
        raise
    except Exception as error:
        if violations:
            raise ProviderRulesBroken(violations) from error
        raise


@cache
def rules() -> dict[str, Any]:
    """The whole rules document, read once."""
    return json.loads(RULES_PATH.read_text(encoding="utf-8"))


def resource_rules(resource_type: str) -> dict[str, Any] | None:
    return rules()["resources"].get(resource_type)


def source_of(resource_type: str) -> str:
    entry = resource_rules(resource_type) or {}
    document = rules()
    provider = entry.get("provider", document["provider"])
    commit = entry.get("commit", "?")
    version = f"@{commit[:12]}" if re.fullmatch(r"[0-9a-f]{40}", commit) else f" ({commit})"
    return f"{provider} {entry.get('source', '?')}{version}, read {document['read']}"


@cache
def _service_model(service: str) -> Any:
    return _SESSION.get_service_model(service)


_SESSION = botocore.session.get_session()


@cache
def _botocore_enum(reference: str) -> tuple[str, ...]:
    """`service:Shape` -> the enum values botocore's model lists for that shape."""
    service, shape = reference.split(":")
    return tuple(_service_model(service).shape_for(shape).enum)


def enum_values(rule: dict[str, Any]) -> tuple[str, ...]:
    spec = rule["enum"]
    return _botocore_enum(spec) if isinstance(spec, str) else tuple(str(value) for value in spec)


def values_at(inputs: Any, path: str, where: str = "") -> Iterator[tuple[str, Any]]:
    """Every value set at `path` (list positions written `[]`), with its concrete path."""
    if not path:
        if inputs is not None:
            yield where, inputs
        return
    head, _, rest = path.partition(".")
    key, many = (head[:-2], True) if head.endswith("[]") else (head, False)
    if not isinstance(inputs, dict) or inputs.get(key) is None:
        return
    value = inputs.get(key)
    here = f"{where}.{key}" if where else key
    if many:
        for index, item in enumerate(value if isinstance(value, list) else []):
            yield from values_at(item, rest, f"{here}[{index}]")
    else:
        yield from values_at(value, rest, here)


def _is_set(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _value_problem(rule: dict[str, Any], value: Any) -> str | None:
    """What is wrong with one value under one value rule, or None."""
    if "anyOf" in rule:
        problems = [_value_problem(choice, value) for choice in rule["anyOf"]]
        return None if None in problems else "any of: " + "; or ".join(str(problem) for problem in problems)
    if "enum" in rule:
        allowed = enum_values(rule)
        fold = str.lower if rule.get("ignoreCase") else str
        if fold(str(value)) not in {fold(choice) for choice in allowed}:
            return f"enum: one of {', '.join(allowed)}"
    if "multipleOf" in rule and isinstance(value, int) and value % rule["multipleOf"]:
        return f"a multiple of {rule['multipleOf']}"
    if "range" in rule and isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = rule["range"]
        if (low is not None and value < low) or (high is not None and value > high):
            return f"range: between {low if low is not None else '-inf'} and {high if high is not None else 'inf'}"
    if "greaterThan" in rule and isinstance(value, (int, float)) and value <= rule["greaterThan"]:
        return f"range: greater than {rule['greaterThan']}"
    if "length" in rule and isinstance(value, str):
        low, high = rule["length"]
        if not low <= len(value) <= high:
            return f"length: {low} to {high} characters (got {len(value)})"
    if "pattern" in rule and isinstance(value, str) and not re.search(rule["pattern"], value):
        return f"pattern: {rule['pattern']}" + (f" ({rule['hint']})" if rule.get("hint") else "")
    if "items" in rule and isinstance(value, (list, dict)):
        low, high = rule["items"]
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return f"items: {low if low is not None else 0} to {high if high is not None else 'any'} (got {len(value)})"
    if "type" in rule and not _has_type(value, rule["type"]):
        return f"type: {rule['type']}"
    if "json" in rule and isinstance(value, str) and not _json_object(value):
        return "json: a JSON object"
    if "duration" in rule and isinstance(value, str) and not re.fullmatch(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+|0", value):
        return "duration: a Go duration such as 10m or 1h30m"
    return None


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _has_type(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool) or str(value).lower() in ("true", "false")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "map":
        return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())
    return True


def _relation_problem(rule: dict[str, Any], scope: Any) -> tuple[str, str] | None:
    """A broken ConflictsWith / ExactlyOneOf / AtLeastOneOf / RequiredWith in one scope:
    (the property it is about, the rule with what was found)."""
    named = [rule.get("path", ""), *rule.get("conflictsWith", []), *rule.get("exactlyOneOf", []),
             *rule.get("atLeastOneOf", []), *rule.get("requiredWith", [])]
    present = {path: any(_is_set(value) for _, value in values_at(scope, path)) for path in named if path}
    subject = rule.get("path", "")
    if rule.get("conflictsWith") and present.get(subject):
        clash = [path for path in rule["conflictsWith"] if present[path]]
        if clash:
            return subject, f"ConflictsWith {', '.join(rule['conflictsWith'])} ({' and '.join([subject, *clash])} are both set)"
    if rule.get("exactlyOneOf") and (not subject or present.get(subject)):
        chosen = [path for path in rule["exactlyOneOf"] if present[path]]
        if len(chosen) != 1:
            found = "none is set" if not chosen else f"{' and '.join(chosen)} are all set"
            return subject or " / ".join(rule["exactlyOneOf"]), f"ExactlyOneOf {', '.join(rule['exactlyOneOf'])} ({found})"
    if rule.get("atLeastOneOf") and not any(present[path] for path in rule["atLeastOneOf"]):
        return " / ".join(rule["atLeastOneOf"]), f"AtLeastOneOf {', '.join(rule['atLeastOneOf'])} (none is set)"
    if rule.get("requiredWith") and present.get(subject):
        missing = [path for path in rule["requiredWith"] if not present[path]]
        if missing:
            return subject, f"RequiredWith {', '.join(rule['requiredWith'])} ({', '.join(missing)} not set)"
    return None


def check(resource_type: str, name: str, inputs: dict[str, Any]) -> list[RuleViolation]:
    """The provider rules that `inputs` break, for a type with rules; none for a type without."""
    entry = resource_rules(resource_type)
    if entry is None:
        return []
    source = source_of(resource_type)
    found: list[RuleViolation] = []
    for rule in entry.get("rules", []):
        if any(kind in rule for kind in RELATION_RULES):
            scopes = values_at(inputs, rule["within"]) if rule.get("within") else [("", inputs)]
            for where, scope in scopes:
                problem = _relation_problem(rule, scope)
                if problem:
                    path, text = problem
                    found.append(RuleViolation(resource_type, name, f"{where}.{path}" if where else path, None, text, source))
            continue
        for where, value in values_at(inputs, rule["path"]):
            problem = _value_problem(rule, value)
            if problem:
                found.append(RuleViolation(resource_type, name, where, value, problem, source))
    return found


@cache
def checked_properties(resource_type: str) -> frozenset[str]:
    """The property paths of a type that a value rule checks (list elements written `[]`)."""
    entry = resource_rules(resource_type) or {}
    return frozenset(rule["path"] for rule in entry.get("rules", []) if "path" in rule and any(kind in rule for kind in VALUE_RULES))


def force_new(resource_type: str) -> tuple[str, ...]:
    """The input paths whose change makes the provider replace the resource (ForceNew)."""
    return tuple((resource_rules(resource_type) or {}).get("forceNew", ()))


def covered(resource_type: str, path: str) -> bool:
    """Whether a value rule checks this property."""
    return path in checked_properties(resource_type)
