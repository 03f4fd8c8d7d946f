"""The order `pulumi up` runs a stack change in, and what AWS refuses because of that order.

Pulumi creates a replacement before it deletes the old resource, and deletes what left the program
at the end of the update; it deletes first where the program asks (`deleteBeforeReplace`) or the
bridge does (a user-given name on an auto-named field, which AWS keeps unique). Each order has its
own way to fail, checked here against `data/change_rules.json`:

- create-before-delete: the new resource needs a value that the old one, or one that leaves with
  it, still holds (a name, a path, a port): AWS refuses the create, or hands back the old resource,
  which the delete at the end then removes;
- delete-before-replace: a resource that is only updated still uses the old one, so AWS refuses the
  delete (a target group behind a listener).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpucloud.plan.change_rules import change_rules
from gpucloud.plan.model import PlanFinding
from gpucloud.testing.provider_rules import values_at

if TYPE_CHECKING:
    from gpucloud.plan.diff_model import PlanDiff, ResourceChange

CREATE_FIRST = "create-before-delete"
DELETE_FIRST = "delete-before-replace"

OUTCOMES = {
    "refused": "AWS refuses to create it",
    "taken over": "AWS answers with the old one instead of a new one, and deleting the old one at the end of the update removes it",
}


@dataclass(frozen=True)
class Order:
    """How Pulumi runs one replacement, and why."""

    order: str
    why: str
    source: str


def _named_field(resource_type: str) -> str | None:
    """The auto-named field whose user-given value makes the bridge delete first, if the type has
    one; the types of other providers (grafana) were not read, and are taken as create-first."""
    rules = change_rules()["order"]["userGivenName"]
    if not resource_type.startswith("aws:") or resource_type in rules["pluginFramework"]:
        return None
    return rules["fields"].get(resource_type, rules["field"])


def replacement_order(change: ResourceChange) -> Order:
    """The order of a replaced resource: the resource option where the program sets it, else
    delete-first for a user-given name the bridge auto-names, else create-first."""
    resource = change.new or change.old
    order = change_rules()["order"]
    if resource is not None and resource.delete_before_replace is not None:
        chosen = DELETE_FIRST if resource.delete_before_replace else CREATE_FIRST
        return Order(chosen, f"the deleteBeforeReplace resource option is {str(resource.delete_before_replace).lower()}",
                     order["resourceOption"]["source"])
    field = _named_field(change.type)
    value = (change.new_inputs or {}).get(field) if field else None
    if value is not None:
        return Order(DELETE_FIRST, f"its {field} {json.dumps(value)} is given by the program, and the bridge replaces a "
                                   "resource with a user-given name delete-first", order["userGivenName"]["source"])
    return Order(CREATE_FIRST, "Pulumi's default", order["default"]["source"])


def _key(inputs: dict[str, Any] | None, paths: list[str]) -> tuple[Any, ...] | None:
    values = []
    for path in paths:
        found = [value for _, value in values_at(inputs or {}, path)]
        if not found:
            return None
        values.append(found[0])
    return tuple(values)


def _refers_to(value: Any, names: set[str]) -> bool:
    text = json.dumps(value, default=str)
    return any(f"${{{name}." in text for name in names)


def _clash(new: tuple[Any, ...], old: tuple[Any, ...], rule: dict[str, Any]) -> bool:
    def form(value: Any) -> str:
        text = str(value)
        return text.lower() if rule.get("ignoreCase") else text

    if rule["match"] == "nested":
        return all(form(a).rstrip("/") + "/" == form(b).rstrip("/") + "/"
                   or form(a).startswith(form(b).rstrip("/") + "/") or form(b).startswith(form(a).rstrip("/") + "/")
                   for a, b in zip(new, old))
    return all(form(a) == form(b) for a, b in zip(new, old))


def _collision(arriving: ResourceChange, leaving: ResourceChange, rule: dict[str, Any], why: str) -> PlanFinding:
    values = ", ".join(f"{path} {json.dumps(value)}" for path, value in zip(rule["paths"], _key(arriving.new_inputs, rule["paths"]) or ()))
    held = f"its old self still holds {values}" if arriving.urn == leaving.urn else f"{leaving.name}, which is {leaving.op}d only at the end of the update, still holds {values}"
    if rule["scope"]:
        held += f" (in the same {', '.join(rule['scope'])})"
    if arriving.urn == leaving.urn:
        fix = ("set deleteBeforeReplace on it, or make the value change with what forces the replacement "
               "(a name left to Pulumi or derived from those properties)")
    else:
        fix = (f"name these resources by their content (the {', '.join(rule['paths'])}), so the same value keeps the same "
               "resource when others are added or removed, with an alias where a resource's name must change")
    verb = "replaced" if arriving.op == "replace" else "created"
    return PlanFinding(
        "diff", "failure", "change-order-collision",
        f"{arriving.name} ({arriving.type}) is {verb} create-first ({why}) while {held}: {OUTCOMES[rule['outcome']]} "
        f"({rule['source']}, read {change_rules()['read']}). Fix: {fix}", arriving.urn)


def _collisions(diff: PlanDiff, orders: dict[str, Order]) -> list[PlanFinding]:
    replaced = {change.name for change in diff.changes if change.op == "replace"}
    create_first = [change for change in diff.changes if change.op == "replace" and orders[change.urn].order == CREATE_FIRST]
    arriving = [*diff.of("create"), *create_first]
    leaving = [*diff.of("delete"), *create_first]
    found = []
    seen: set[tuple[str, str]] = set()
    for rule in change_rules()["unique"]:
        for new in (change for change in arriving if change.type == rule["type"]):
            key = _key(new.new_inputs, rule["paths"])
            scope = _key(new.new_inputs, rule["scope"])
            if key is None or scope is None or _refers_to((key, scope), replaced):
                continue
            why = orders[new.urn].why if new.urn in orders else "a resource new to the program is created before those that left it are deleted"
            for old in (change for change in leaving if change.type == rule["type"]):
                other = _key(old.old_inputs, rule["paths"])
                if (new.urn, old.urn) in seen or other is None or _key(old.old_inputs, rule["scope"]) != scope:
                    continue
                if _clash(key, other, rule):
                    seen.add((new.urn, old.urn))
                    found.append(_collision(new, old, rule, why))
    return found


def _still_used(diff: PlanDiff, orders: dict[str, Order]) -> list[PlanFinding]:
    found = []
    for change in diff.of("replace"):
        if orders[change.urn].order != DELETE_FIRST:
            continue
        for rule in (item for item in change_rules()["inUse"] if item["type"] == change.type):
            for user in diff.changes:
                if user.type != rule["by"] or user.op not in ("update", "same"):
                    continue
                if any(_refers_to(value, {change.name}) for _, value in values_at(user.old_inputs or {}, rule["path"])):
                    found.append(PlanFinding(
                        "diff", "failure", "change-order-in-use",
                        f"{change.name} ({change.type}) is replaced delete-first ({orders[change.urn].why}), but "
                        f"{user.name} ({user.type}) still uses it through {rule['path']} and is not replaced with it, "
                        f"so AWS refuses the delete ({rule['error']}; {rule['source']}, read {change_rules()['read']}). "
                        f"Fix: let the replacement be created first (a name left to Pulumi, or one that changes with what "
                        f"forces the replacement, with deleteBeforeReplace false), or replaceOnChanges on {user.name}'s "
                        f"{rule['path']}, so that Pulumi deletes it first too", change.urn))
    return found


def order_findings(diff: PlanDiff) -> list[PlanFinding]:
    """The failures the order of this change causes: collisions of create-first resources with
    what still holds their values, and delete-first resources still in use."""
    orders = {change.urn: replacement_order(change) for change in diff.of("replace")}
    return [*_collisions(diff, orders), *_still_used(diff, orders)]
