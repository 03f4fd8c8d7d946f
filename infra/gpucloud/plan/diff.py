"""`gpucloud plan --base REF`: what a change to a stack file does, offline.

Two plans of the same stack on the same engine, the base and the change, compared resource by
resource the way `pulumi preview --diff` compares state and program: a URN only in the change is
created, one only in the base deleted; a resource in both whose inputs differ is updated, or
replaced where the provider's ForceNew rules (`data/provider_rules.json`, read from
terraform-provider-aws) say so, or its one-way rules given the old and new values
(`data/change_rules.json`: a Lustre file system that shrinks; a volume that shrinks is refused).
The order Pulumi runs the change in, and what AWS refuses because of it, is `change_order`'s.
The data it builds (`PlanDiff`, `ResourceChange`, `PropertyChange`) is `diff_model`'s, named here too.
Each plan runs on its own fresh moto account, whose ids are random:
ids and ARNs are compared as references to the resource that made them (`${name.id}`), and a
resource that is replaced hands its replacement's new ids to whatever refers to it, which may then
be replaced in turn, as in the real engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpucloud.plan.change_rules import may_be_one_way, one_way
from gpucloud.plan.diff_findings import diff_findings
from gpucloud.plan.diff_model import (
    DATA_RESOURCES,
    GROUP_TYPE,
    LAUNCH_TEMPLATE_TYPE,
    PlanDiff,
    PropertyChange,
    ResourceChange,
    leaf_changes,
)
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource
from gpucloud.testing.provider_rules import force_new, resource_rules, source_of
from gpucloud.userdata.render import user_data_text

__all__ = [
    "DATA_RESOURCES",
    "GROUP_TYPE",
    "LAUNCH_TEMPLATE_TYPE",
    "PlanDiff",
    "PropertyChange",
    "ResourceChange",
    "classify",
    "diff_plans",
    "identifiers",
    "leaf_changes",
    "normalized",
    "references",
    "refusal",
    "rule_path",
]

_IDENTIFIER_KEY = re.compile(r"(^id|^arn|Id|Arn|Ids)$")
"""Outputs AWS hands out as identifiers (`serviceAccountId`, a number in Grafana): compared by
reference whatever their shape, but only where an input of an identifier's name holds them (a
dashboard id of 1 says nothing about a `minSize` of 1)."""
_SHARED_OUTPUTS = frozenset({"ownerId", "accountId", "owner", "region", "availabilityZoneId"})
"""Outputs every resource of the account shares (the account id): not one resource's own, and
never a reference wherever they appear."""
_UNSET: Any = object()
_REFERENCE = re.compile(r"\$\{[^}]+\}")
_RANDOM = re.compile(r"[0-9a-f]{8,}")


def references(plan: Plan) -> dict[str, str]:
    """The values AWS handed out in this plan (ids, ARNs, names with random parts), each mapped
    to `${name.key}` of the resource that returned it, so two runs on fresh accounts compare."""
    return _reference_tables(plan)[0]


def identifiers(plan: Plan) -> dict[str, str]:
    """Identifier outputs that look like any other value (Grafana's dashboard id 1, a service
    account id of six digits): references only where an input of an identifier's name holds them."""
    return _reference_tables(plan)[1]


def _reference_tables(plan: Plan) -> tuple[dict[str, str], dict[str, str]]:
    shared = {str(value) for resource in plan.resources for key, value in resource.outputs.items() if key in _SHARED_OUTPUTS}
    anywhere: dict[str, str] = {}
    keyed: dict[str, str] = {}
    for resource in sorted(plan.resources, key=lambda item: item.urn):
        if not resource.custom:
            continue
        if resource.id and resource.id not in shared and _generated(resource.id, whole=True):
            anywhere.setdefault(resource.id, f"${{{resource.name}.id}}")
        for key, value in sorted(resource.outputs.items()):
            if not isinstance(value, (str, int)) or isinstance(value, bool) or key in _SHARED_OUTPUTS or str(value) in shared:
                continue
            if _generated(str(value), whole=False):
                anywhere.setdefault(str(value), f"${{{resource.name}.{key}}}")
            elif _IDENTIFIER_KEY.search(key):
                keyed.setdefault(str(value), f"${{{resource.name}.{key}}}")
    return anywhere, {value: reference for value, reference in keyed.items() if value not in anywhere}


def _generated(value: str, *, whole: bool) -> bool:
    """An id or ARN (worth comparing by reference): an ARN, or a value with a random hex run; a
    resource's id counts whole as well (an IAM role's id is its name)."""
    if len(value) < 6 or value in ("true", "false"):
        return False
    return whole or value.startswith("arn:") or bool(_RANDOM.search(value))


def normalized(value: Any, table: dict[str, str], pattern: re.Pattern[str] | None,
               keyed: dict[str, str] | None = None, key: str = "") -> Any:
    """`value` with every generated id, whole or inside a string (a policy document, a launch
    template's user data, compared as the document it encodes), replaced by its reference; an
    identifier of `keyed` only as the whole value of an identifier-named input."""
    if isinstance(value, dict):
        return {name: normalized(item, table, pattern, keyed, name) for name, item in value.items()}
    if isinstance(value, list):
        return [normalized(item, table, pattern, keyed, key) for item in value]
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        text = str(value)
        if text in table and (isinstance(value, str) or key == "" or _IDENTIFIER_KEY.search(key)):
            return table[text]
        if keyed and text in keyed and _IDENTIFIER_KEY.search(key):
            return keyed[text]
        if isinstance(value, str) and key == "userData" and (text := user_data_text(value)) is not None:
            value = text
        if isinstance(value, str) and pattern is not None:
            return pattern.sub(lambda match: table[match.group(0)], value)
    return value


def _pattern(table: dict[str, str]) -> re.Pattern[str] | None:
    inside = sorted((value for value in table if value.startswith("arn:") or _RANDOM.search(value)), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, inside))) if inside else None


def rule_path(path: str) -> str:
    """A concrete property path in the form the provider rules use (`a[0].b` -> `a[].b`)."""
    return re.sub(r"\[\d+\]", "[]", path)


def _under(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor + ".") or path.startswith(ancestor + "[")


def classify(resource: AppliedResource, path: str, old: Any = _UNSET, new: Any = _UNSET) -> tuple[bool, bool, str]:
    """(forces replacement, may replace, why) for a change at `path` of this resource.

    A type with provider rules has its whole ForceNew list there (read from its provider file), so
    a property outside it updates in place, unless a one-way rule (`change_rules.json`, the
    provider's CustomizeDiff) replaces it given the old and new values; without the values, such a
    rule may replace it. A type without rules is not known, and each change to it may replace."""
    general = rule_path(path)
    top = re.split(r"[.\[]", path, maxsplit=1)[0]
    if "*" in resource.replace_on_changes or any(_under(general, rule_path(item)) or _under(top, item)
                                                  for item in resource.replace_on_changes):
        return True, False, "replaceOnChanges resource option"
    if resource_rules(resource.type) is None:
        return False, True, f"no provider rules for {resource.type}: whether a change replaces it is not known"
    for forced in force_new(resource.type):
        if _under(general, forced) or _under(forced, general):
            return True, False, f"ForceNew on {forced} ({source_of(resource.type)})"
    rule = may_be_one_way(resource.type, general) if old is _UNSET else one_way(resource.type, general, old, new, resource.inputs)
    if rule is not None and rule.outcome == "replaces":
        return True, False, rule.reason
    if rule is not None and rule.outcome == "may replace":
        return False, True, rule.reason
    return False, False, ""


def refusal(resource: AppliedResource, path: str, old: Any, new: Any) -> str:
    """Why the provider or AWS refuses this in-place update (a one-way rule), or ""."""
    rule = one_way(resource.type, rule_path(path), old, new, resource.inputs)
    return rule.reason if rule is not None and rule.outcome == "refused" else ""


def diff_plans(base: Plan, current: Plan, *, intended: tuple[str, ...] = (),
               base_label: str = "base", current_label: str = "working tree") -> PlanDiff:
    """Compare two plans of one stack: every resource's operation, the properties behind it, and
    the findings a reviewer must see (data replaced or deleted, nodes dropped or rolled)."""
    (old_table, old_keyed), (new_table, new_keyed) = _reference_tables(base), _reference_tables(current)
    old_pattern, new_pattern = _pattern(old_table), _pattern(new_table)
    before = {resource.urn: resource for resource in base.resources}
    after = {resource.urn: resource for resource in current.resources}
    old_inputs = {urn: normalized(resource.inputs, old_table, old_pattern, old_keyed) for urn, resource in before.items()}
    new_inputs = {urn: normalized(resource.inputs, new_table, new_pattern, new_keyed) for urn, resource in after.items()}
    changes: dict[str, ResourceChange] = {}
    for urn, resource in after.items():
        if urn not in before:
            changes[urn] = ResourceChange("create", urn, resource.type, resource.name, None, resource)
            continue
        change = ResourceChange("same", urn, resource.type, resource.name, before[urn], resource)
        for path, old, new in leaf_changes(old_inputs[urn], new_inputs[urn]):
            _record(change, resource, path, old, new)
        changes[urn] = change
    for urn, resource in before.items():
        if urn not in after:
            changes[urn] = ResourceChange("delete", urn, resource.type, resource.name, resource, None)
    _cascade(changes, new_inputs, after)
    for urn, change in changes.items():
        change.old_inputs, change.new_inputs = old_inputs.get(urn), new_inputs.get(urn)
        if change.op == "same" and change.changes:
            change.op = "replace" if change.replace_reasons else "update"
    ordered = [changes[urn] for urn in [*after, *(urn for urn in before if urn not in after)]]
    diff = PlanDiff(base=base, current=current, changes=ordered, base_label=base_label, current_label=current_label)
    diff.findings = diff_findings(diff, intended)
    return diff


def _record(change: ResourceChange, resource: AppliedResource, path: str, old: Any, new: Any) -> None:
    top = re.split(r"[.\[]", path, maxsplit=1)[0]
    if top in resource.ignore_changes or path in resource.ignore_changes:
        change.ignored.append(PropertyChange(path, old, new, reason="ignoreChanges"))
        return
    forces, may, why = classify(resource, path, old, new)
    refused = "" if forces or may else refusal(resource, path, old, new)
    change.changes.append(PropertyChange(path, old, new, forces, why or refused, may, bool(refused)))


def _cascade(changes: dict[str, ResourceChange], new_inputs: dict[str, Any], after: dict[str, AppliedResource]) -> None:
    """Carry replacements and new launch template versions to what refers to them, until nothing
    more changes: a replaced resource's ids are new (unknown until it exists, as in `pulumi
    preview`), and a launch template's update is a new version for the group that names it. Each
    round settles at least one change, so it ends within one round per change."""
    done: set[str] = set()
    for _ in range(len(changes) + 1):
        replaced = {change.name for change in changes.values() if change.replace_reasons and change.urn not in done}
        versioned = {change.name for change in changes.values()
                     if change.type == LAUNCH_TEMPLATE_TYPE and change.changes and not change.replace_reasons
                     and change.urn not in done}
        if not replaced and not versioned:
            return
        done |= {change.urn for change in changes.values() if change.name in replaced | versioned}
        for urn, inputs in new_inputs.items():
            change = changes[urn]
            if change.op != "same":
                continue
            known = {item.path for item in change.changes}
            for path, value in _paths(inputs):
                if path in known:
                    continue
                names = {reference[2:].split(".", 1)[0] for reference in _REFERENCE.findall(value)} if isinstance(value, str) else set()
                if names & replaced:
                    source = sorted(names & replaced)[0]
                    _record(change, after[urn], path, value, f"(known after apply: {source} is replaced)")
                elif isinstance(value, dict) and "version" in value and f"{path}.version" not in known and any(
                        f"${{{name}.id}}" in str(item) for name in versioned for item in value.values()):
                    source = next(name for name in sorted(versioned) if f"${{{name}.id}}" in str(value))
                    _record(change, after[urn], f"{path}.version" if path else "version", value["version"],
                            f"(known after apply: new version of {source})")
    raise RuntimeError("a replacement kept reaching further resources after one round per resource")


def _paths(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every node of an input tree with its path, blocks before their leaves."""
    if isinstance(value, dict):
        if path:
            yield path, value
        for key, item in value.items():
            yield from _paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, f"{path}[{index}]")
    else:
        yield path, value

