"""Reading resource inputs whatever container they arrive in.

The policy engine hands the rules read-only ``Mapping``/``Sequence`` proxies, the
offline plan plain dicts and lists; protobuf turns every number into a float; and
pulumi-aws v7 types several launch-template booleans as the strings "true"/"false".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .model import UNKNOWN, UnknownInputError


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


class KnownOnlyMapping(Mapping[str, Any]):
    """Resource inputs as the pack hands them to the rules during preview.

    Reading a value that is UNKNOWN raises UnknownInputError naming its path, so a rule
    that did not plan for an unknown cannot pass or fail on it by accident; ``peek`` reads
    it as UNKNOWN for the rules that can decide anyway.
    """

    def __init__(self, target: Mapping[str, Any], path: tuple[Any, ...] = ()):
        self._target = target
        self.path = path

    def __getitem__(self, key: str) -> Any:
        value = self._target[key]
        if value is UNKNOWN:
            raise UnknownInputError((*self.path, key))
        return known_only(value, (*self.path, key))

    def __contains__(self, key: object) -> bool:
        return key in self._target

    def __iter__(self) -> Iterator[str]:
        return iter(self._target)

    def __len__(self) -> int:
        return len(self._target)

    def peek(self, key: str, default: Any = None) -> Any:
        value = self._target.get(key, default)
        return value if value is UNKNOWN else known_only(value, (*self.path, key))


class KnownOnlySequence(Sequence[Any]):
    """A list input under the same contract as KnownOnlyMapping."""

    def __init__(self, target: Sequence[Any], path: tuple[Any, ...] = ()):
        self._target = target
        self.path = path

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[position] for position in range(len(self._target))[index]]
        value = self._target[index]
        if value is UNKNOWN:
            raise UnknownInputError((*self.path, index))
        return known_only(value, (*self.path, index))

    def __len__(self) -> int:
        return len(self._target)

    def peek_items(self) -> list[Any]:
        return [
            value if value is UNKNOWN else known_only(value, (*self.path, index))
            for index, value in enumerate(self._target)
        ]


def known_only(value: Any, path: tuple[Any, ...] = ()) -> Any:
    """Wrap plain inputs holding UNKNOWN values so that reading one raises UnknownInputError."""
    if isinstance(value, (KnownOnlyMapping, KnownOnlySequence)):
        return value
    if isinstance(value, Mapping):
        return KnownOnlyMapping(value, path)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return KnownOnlySequence(value, path)
    return value


def peek(value: Any, key: str) -> Any:
    """``value[key]`` when value is a mapping holding it, UNKNOWN when that is unknown, else None."""
    if isinstance(value, KnownOnlyMapping):
        return value.peek(key)
    if isinstance(value, Mapping):
        return value.get(key)
    return None


def peek_list(value: Any) -> list[Any]:
    """``as_list`` that keeps unknown items as UNKNOWN (a whole unknown list is ``[UNKNOWN]``)."""
    if value is UNKNOWN:
        return [UNKNOWN]
    if isinstance(value, KnownOnlySequence):
        return value.peek_items()
    return as_list(value)


def unknown_at(container: Any, key: Any) -> UnknownInputError:
    """The error to raise when a rule cannot decide because ``container[key]`` is unknown."""
    return UnknownInputError((*getattr(container, "path", ()), key))
