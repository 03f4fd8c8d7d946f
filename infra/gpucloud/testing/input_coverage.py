"""Which input properties of a resource its handler read and passed on to AWS.

A handler gets its inputs as a `TrackedInputs`: a dict that records every key whose value is
read (by `[]`, `get`, `items`, `values`, iteration, copying, `json.dumps`), through nested
objects and lists. What a handler read went into a call the engine checks (botocore's model,
moto, the engine's own rules); what it never read reached AWS through no checked call, and the
plan counts it unless a cited provider rule covers it (`testing/provider_rules.py`).

Property paths are pulumi's input names as the engine sees them, with list positions folded:
`mixedInstancesPolicy.launchTemplate.overrides[].instanceType`. Maps of free-form keys (tags,
alarm dimensions) are one property each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAP_PROPERTIES = frozenset({"tags", "tagsAll", "dimensions", "variables"})
"""Inputs whose keys are data, not schema: the map is one property (pulumi-aws types them as
`Mapping[str, str]`)."""


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _wrap(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict) and not isinstance(value, TrackedInputs):
        return TrackedInputs(value, path, seen)
    if isinstance(value, list) and not isinstance(value, _TrackedList):
        if any(isinstance(item, (dict, list)) for item in value):
            return _TrackedList(value, path + "[]", seen)
        seen.add(path + "[]")  # a list of strings or numbers is read whole (",".join skips __iter__)
    return value


class TrackedInputs(dict):
    """A resource's inputs that remember which properties were read (in `seen`)."""

    def __init__(self, data: dict[str, Any], path: str = "", seen: set[str] | None = None):
        super().__init__(data)
        self.path = path
        self.seen: set[str] = set() if seen is None else seen

    def _read(self, key: str) -> Any:
        path = _join(self.path, key)
        self.seen.add(path)
        value = dict.__getitem__(self, key)
        if key in MAP_PROPERTIES and isinstance(value, dict):
            return value
        return _wrap(value, path, self.seen)

    def __getitem__(self, key: str) -> Any:
        return self._read(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self._read(key) if dict.__contains__(self, key) else default

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self._read(key)
            dict.pop(self, key)
            return value
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._read(key)
        return dict.setdefault(self, key, default)

    def __iter__(self) -> Iterator[str]:
        # Defining __iter__ also makes dict(...), {**...} and update() read through _read.
        return iter(list(dict.keys(self)))

    def items(self):  # type: ignore[override]
        return [(key, self._read(key)) for key in dict.keys(self)]

    def values(self):  # type: ignore[override]
        return [self._read(key) for key in dict.keys(self)]

    def copy(self) -> dict[str, Any]:
        return {key: self._read(key) for key in dict.keys(self)}

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (self.copy(),))


class _TrackedList(list):
    """A list input whose elements, read, are tracked under `path` (ending in `[]`)."""

    def __init__(self, data: list[Any], path: str, seen: set[str]):
        super().__init__(data)
        self.path = path
        self.seen = seen

    def _element(self, value: Any) -> Any:
        self.seen.add(self.path)
        return _wrap(value, self.path, self.seen)

    def __getitem__(self, index: Any) -> Any:
        value = list.__getitem__(self, index)
        if isinstance(index, slice):
            return [self._element(item) for item in value]
        return self._element(value)

    def __iter__(self) -> Iterator[Any]:
        return (self._element(item) for item in list.__iter__(self))

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


def leaves(value: Any, path: str = "") -> Iterator[str]:
    """Every property path a value sets, list positions folded, maps as one property."""
    if isinstance(value, dict) and value and path.rsplit(".", 1)[-1] not in MAP_PROPERTIES:
        for key, item in dict.items(value):
            yield from leaves(item, _join(path, key))
    elif isinstance(value, list) and value:
        for item in list.__iter__(value):
            yield from leaves(item, path + "[]")
    elif path and value is not None:
        yield path


def set_properties(inputs: dict[str, Any]) -> list[str]:
    """The distinct property paths an input set gives values to, sorted."""
    return sorted(set(leaves(inputs)))


def unread(inputs: TrackedInputs) -> list[str]:
    """The properties of `inputs` the handler never read. Reading an object alone reads none of
    its members: each must be read itself (boto3 serializing a nested object does)."""
    return [path for path in set_properties(inputs) if path not in inputs.seen]


def unchecked(resource_type: str, inputs: TrackedInputs) -> tuple[str, ...]:
    """The properties neither read by the handler nor checked by a cited provider rule."""
    from gpucloud.testing.provider_rules import covered

    return tuple(path for path in unread(inputs) if not covered(resource_type, path))
