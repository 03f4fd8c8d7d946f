"""Reading resource inputs whatever container they arrive in.

The policy engine hands the rules read-only ``Mapping``/``Sequence`` proxies, the
offline plan plain dicts and lists; protobuf turns every number into a float; and
pulumi-aws v7 types several launch-template booleans as the strings "true"/"false".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping)


def as_list(value: Any) -> list[Any]:
    """None → [], a single item → [item], any sequence but a string → a list."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)):
        return [value]
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The mapping items of a list input (blocks such as ``ingress`` or ``blockDeviceMappings``)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]


def entry(value: Any, key: str) -> Any:
    """``value[key]`` when value is a mapping holding it, else None."""
    if isinstance(value, Mapping) and key in value:
        return value[key]
    return None


def is_true(value: Any) -> bool:
    """True for the bool True and for the string "true" (any case)."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() == "true"


def as_number(value: Any) -> float | None:
    """A finite number from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def text(value: Any) -> str | None:
    """A non-blank string, else None."""
    if isinstance(value, str) and value.strip():
        return value
    return None


def to_plain(value: Any) -> Any:
    """Copy mapping/sequence proxies into dicts and lists (for json.dumps and parliament)."""
    if isinstance(value, Mapping):
        return {str(key): to_plain(value[key]) for key in value}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Sequence):
        return [to_plain(item) for item in value]
    return value
