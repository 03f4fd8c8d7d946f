"""IAM policy variables: `${aws:username}`, `${aws:userid}`, `${aws:PrincipalTag/team}` in a
policy stand for the request's own values of those keys, so one policy can hold each caller to
their own resources. What AWS documents (IAM user guide, "IAM policy elements: Variables and tags"
and "AWS global condition context keys"; read 2026-11-28):

- only a policy whose `Version` is `2012-10-17` has variables; in an older one `${...}` is text;
- a variable may sit in the `Resource` element, in the resource part of an ARN only (after its
  fifth colon), and in the values of string and ARN condition operators, nowhere else;
- the variable takes the value of the request-context key it names (key names ignore case);
- a key the request does not hold (`aws:username` for a role, `aws:userid` for an anonymous call,
  `aws:PrincipalTag/<key>` for a principal without that tag) cannot be resolved, and "any attempt
  to match it fails and causes the statement to be invalid": the statement matches nothing;
- `${aws:userid, 'anonymous'}` gives a default for a key the request lacks;
- a key the request holds several values of is taken as unresolvable too (the page names a
  variable's value in the singular; this is the evaluator's reading, not AWS's words);
- `${*}`, `${?}` and `${$}` are the characters themselves, never wildcards.

A resolved pattern is a tuple of (piece, literal) pairs: the policy's own text (wildcards keep
their meaning) and each variable's value (matched as it is).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

VARIABLES_VERSION = "2012-10-17"
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_DEFAULT = re.compile(r"^\s*(?P<key>[^,]+?)\s*,\s*'(?P<default>[^']*)'\s*$")
_CHARACTERS = frozenset("*?$")

Pattern = str | tuple[tuple[str, bool], ...]
"""A policy string as written (no variable in it), or resolved into (piece, literal) pairs."""


class UnresolvedVariable(Exception):
    """A variable whose key the request does not hold, nor a default: its statement matches nothing."""


def has_variables(document: object) -> bool:
    return isinstance(document, Mapping) and str(document.get("Version", "")) == VARIABLES_VERSION


def resolve(text: str, context: Mapping[str, Sequence[str]]) -> Pattern:
    """A condition value with its variables replaced by the request's values."""
    if "${" not in text:
        return text
    pieces: list[tuple[str, bool]] = []
    position = 0
    for found in _VARIABLE.finditer(text):
        pieces += [(text[position:found.start()], False), (_value(found.group(1), context), True)]
        position = found.end()
    pieces.append((text[position:], False))
    return tuple(piece for piece in pieces if piece[0])


def resolve_resource(pattern: str, context: Mapping[str, Sequence[str]]) -> Pattern:
    """A `Resource` pattern with the variables of its resource part (after the ARN's fifth colon)
    replaced; before it, `${...}` is left as the policy wrote it."""
    if "${" not in pattern:
        return pattern
    parts = pattern.split(":", 5)
    if len(parts) < 6:
        return resolve(pattern, context)
    head = ":".join(parts[:5]) + ":"
    tail = resolve(parts[5], context)
    return ((head, False), *(((tail, False),) if isinstance(tail, str) else tail))


def text_of(pattern: Pattern) -> str:
    """The resolved value as one string (for the operators that compare whole values)."""
    return pattern if isinstance(pattern, str) else "".join(piece for piece, _literal in pattern)


def _value(name: str, context: Mapping[str, Sequence[str]]) -> str:
    if name in _CHARACTERS:
        return name
    given = _DEFAULT.match(name)
    key, default = (given["key"], given["default"]) if given else (name.strip(), None)
    values = [value for value in context.get(key.lower(), ()) if value != ""]
    if len(values) == 1:
        return values[0]
    if default is not None:
        return default
    raise UnresolvedVariable(key)
