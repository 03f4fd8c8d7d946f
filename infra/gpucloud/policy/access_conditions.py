"""Condition operators of IAM policies, and the wildcard matching of actions, resources and
string values, as AWS documents them (IAM user guide "IAM JSON policy elements: Condition
operators" and "Single-valued vs. multivalued context keys"; read 2026-11-28). A value may be a
policy variable already resolved (`gpucloud.policy.policy_variables`): its value matches literally
under the string operators; the ARN operators match the resolved ARN part by part with wildcards
(an ARN holds no `*` or `?` of its own)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from functools import lru_cache

from .policy_variables import Pattern, text_of


class UnsupportedOperator(Exception):
    """A condition operator AWS does not have (a policy AWS would refuse)."""


def condition(operator: str, key: str, values: tuple[Pattern, ...], context: Mapping[str, list[str]]) -> bool:
    """One operator on one key. Values of the policy are ORed; a negated operator is true when the
    key matches none of them. A key missing from the request makes the condition false, a negated
    one true; ...IfExists and ForAllValues are true then, ForAnyValue false; Null tests presence."""
    given = context.get(key)
    present = [value for value in given or [] if value != ""]
    qualifier, _, base = operator.rpartition(":")
    if qualifier not in ("", "ForAllValues", "ForAnyValue"):
        raise UnsupportedOperator(f"unknown condition set operator {qualifier!r}")
    if base == "Null":
        return any((value.lower() == "true") == (not present) for value in values)
    if_exists = base.endswith("IfExists")
    match, negated = _operator(base.removesuffix("IfExists"))
    if given is None:
        if qualifier:
            return qualifier == "ForAllValues"
        return if_exists or negated

    def holds(value: str) -> bool:
        found = any(match(value, pattern if match is _like else text_of(pattern)) for pattern in values)
        return not found if negated else found

    if qualifier == "ForAllValues":
        return all(holds(value) for value in given)
    if qualifier == "ForAnyValue":
        return any(holds(value) for value in given)
    return all(holds(value) for value in given) if negated else any(holds(value) for value in given)


def _operator(name: str):
    """(how one request value matches one policy value, whether the operator is negated)."""
    for positive, negative, match in _OPERATORS:
        if name in positive:
            return match, False
        if name in negative:
            return match, True
    raise UnsupportedOperator(f"unknown condition operator {name!r}")


def _numeric(compare):
    def match(value: str, pattern: str) -> bool:
        try:
            return compare(float(value), float(pattern))
        except ValueError:
            return False
    return match


def _date(compare):
    def match(value: str, pattern: str) -> bool:
        try:
            return compare(_when(value), _when(pattern))
        except ValueError:
            return False
    return match


def _when(text: str) -> datetime:
    """An ISO 8601 date or time, or epoch seconds ("Date condition operators")."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return datetime.fromtimestamp(float(text), timezone.utc)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _in_network(value: str, pattern: str) -> bool:
    try:
        return ipaddress.ip_address(value) in ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return False


def _arn_matches(value: str, pattern: str) -> bool:
    """ArnEquals and ArnLike: each of the six colon-separated parts is matched on its own, with wildcards."""
    values, patterns = value.split(":", 5), pattern.split(":", 5)
    return len(values) == len(patterns) == 6 and all(glob(p, v) for p, v in zip(patterns, values))


def _like(value: str, pattern: Pattern) -> bool:
    return glob(pattern, value)


_OPERATORS = (
    ({"StringEquals"}, {"StringNotEquals"}, lambda value, pattern: value == pattern),
    ({"StringEqualsIgnoreCase"}, {"StringNotEqualsIgnoreCase"}, lambda value, pattern: value.lower() == pattern.lower()),
    ({"StringLike"}, {"StringNotLike"}, _like),
    ({"ArnEquals", "ArnLike"}, {"ArnNotEquals", "ArnNotLike"}, _arn_matches),
    ({"Bool"}, set(), lambda value, pattern: value.lower() == pattern.lower()),
    ({"BinaryEquals"}, set(), lambda value, pattern: value == pattern),
    ({"IpAddress"}, {"NotIpAddress"}, _in_network),
    ({"NumericEquals"}, {"NumericNotEquals"}, _numeric(lambda value, limit: value == limit)),
    ({"NumericLessThan"}, set(), _numeric(lambda value, limit: value < limit)),
    ({"NumericLessThanEquals"}, set(), _numeric(lambda value, limit: value <= limit)),
    ({"NumericGreaterThan"}, set(), _numeric(lambda value, limit: value > limit)),
    ({"NumericGreaterThanEquals"}, set(), _numeric(lambda value, limit: value >= limit)),
    ({"DateEquals"}, {"DateNotEquals"}, _date(lambda value, limit: value == limit)),
    ({"DateLessThan"}, set(), _date(lambda value, limit: value < limit)),
    ({"DateLessThanEquals"}, set(), _date(lambda value, limit: value <= limit)),
    ({"DateGreaterThan"}, set(), _date(lambda value, limit: value > limit)),
    ({"DateGreaterThanEquals"}, set(), _date(lambda value, limit: value >= limit)),
)


def glob(pattern: Pattern, text: str) -> bool:
    """`*` any run of characters, `?` one; everything else literal and case-sensitive, and a policy
    variable's value literal throughout."""
    return _compiled(pattern).fullmatch(text) is not None


@lru_cache(maxsize=4096)
def _compiled(pattern: Pattern) -> re.Pattern[str]:
    pieces = ((pattern, False),) if isinstance(pattern, str) else pattern
    return re.compile("".join(re.escape(piece) if literal else _wildcards(piece) for piece, literal in pieces), re.DOTALL)


def _wildcards(text: str) -> str:
    return "".join(".*" if part == "*" else "." if part == "?" else re.escape(part) for part in re.split(r"([*?])", text))
