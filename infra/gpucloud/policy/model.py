"""Data shapes shared by the rules, the offline plan and the CrossGuard pack.

Nothing here imports pulumi_policy: the offline plan evaluates the same rules
without the policy SDK installed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

EnforcementLevel = Literal["mandatory", "advisory"]
MANDATORY: EnforcementLevel = "mandatory"
ADVISORY: EnforcementLevel = "advisory"

DEFAULT_MAX_GROUP_SIZE = 16
DEFAULT_REQUIRED_TAGS = ("Project", "Owner", "CostCenter")


class _Unknown:
    """A value Pulumi cannot know yet (an output of a resource still to be created)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
"""Stands in for an unknown value in stack-level rules (see policies/gpucloud_pack.py)."""


@dataclass(frozen=True)
class PlannedResource:
    """One resource of a stack, as the offline plan or the policy engine sees it."""

    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    """Resource options; the rules read the keys ``protect`` and ``retainOnDelete``."""
    property_dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Property name to the URNs it was computed from (CrossGuard gives these; optional offline)."""


@dataclass(frozen=True)
class Violation:
    """One broken rule on one resource (``urn`` is empty for a stack-wide finding)."""

    policy_name: str
    enforcement_level: EnforcementLevel
    urn: str
    message: str

    @property
    def mandatory(self) -> bool:
        return self.enforcement_level == MANDATORY


@dataclass(frozen=True)
class PolicyConfig:
    """Per-stack settings of the rules (the pack's ``PolicyConfigSchema`` values)."""

    max_group_size: int = DEFAULT_MAX_GROUP_SIZE
    required_tags: tuple[str, ...] = DEFAULT_REQUIRED_TAGS

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> PolicyConfig:
        """Read the camelCase keys of a policy's config; absent keys keep their defaults."""
        values = values or {}
        max_group_size = values.get("maxGroupSize", DEFAULT_MAX_GROUP_SIZE)
        if isinstance(max_group_size, bool) or not isinstance(max_group_size, (int, float)):
            raise ValueError(f"maxGroupSize must be a number, got {max_group_size!r}")
        if not math.isfinite(max_group_size) or max_group_size < 1:
            raise ValueError(f"maxGroupSize must be a positive finite number, got {max_group_size!r}")
        required_tags = values.get("requiredTags", DEFAULT_REQUIRED_TAGS)
        if isinstance(required_tags, str) or not all(isinstance(tag, str) for tag in required_tags):
            raise ValueError(f"requiredTags must be a list of tag keys, got {required_tags!r}")
        return cls(max_group_size=int(max_group_size), required_tags=tuple(required_tags))


Report = Callable[[str], None]
"""Receives one violation message about the resource being validated."""

StackReport = Callable[[str, "str | None"], None]
"""Receives one violation message and the URN it is about (None: the whole stack)."""

ResourceValidator = Callable[[str, Mapping[str, Any], Report, PolicyConfig], None]
StackValidator = Callable[[Sequence[PlannedResource], StackReport, PolicyConfig], None]


@dataclass(frozen=True)
class ResourceRule:
    """A rule checked on each resource on its own."""

    name: str
    description: str
    enforcement_level: EnforcementLevel
    validate: ResourceValidator
    config_schema: Mapping[str, Mapping[str, Any]] | None = None
    """JSON-schema properties of the rule's config, camelCase as in the pack's config file."""


@dataclass(frozen=True)
class StackRule:
    """A rule that needs the whole stack (links between resources, resource options)."""

    name: str
    description: str
    enforcement_level: EnforcementLevel
    validate: StackValidator
    config_schema: Mapping[str, Mapping[str, Any]] | None = None
