"""Reading the statements of a policy document as AWS does: a policy's `Statement` may be one
statement or a list, and a statement's `Action`, `Resource` and principals one string or a list
(IAM user guide, "IAM JSON policy elements reference")."""

from __future__ import annotations

import fnmatch
import json
from typing import Any


def statements(policy: str | dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of a policy, given as JSON text or as a parsed document."""
    document = json.loads(policy) if isinstance(policy, str) else policy
    found = document.get("Statement", [])
    return [found] if isinstance(found, dict) else list(found)


def listed(value: Any) -> list[str]:
    """One string or a list of them (or nothing) as a list."""
    return [value] if isinstance(value, str) else list(value or [])


def principals(statement: dict[str, Any], kind: str) -> list[str]:
    """The statement's principals of one kind (`AWS`, `Service`); none where it names `*`."""
    principal = statement.get("Principal")
    return listed(principal.get(kind)) if isinstance(principal, dict) else []


def allows(statement: dict[str, Any], action: str) -> bool:
    """An Allow statement whose Action patterns cover `action`."""
    return statement.get("Effect") == "Allow" and any(
        fnmatch.fnmatchcase(action, pattern) for pattern in listed(statement.get("Action"))
    )
