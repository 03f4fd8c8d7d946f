"""Data shapes shared by the rules, the offline plan and the CrossGuard pack.

Nothing here imports pulumi_policy: the offline plan evaluates the same rules
without the policy SDK installed.
"""

from __future__ import annotations

import difflib

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

EnforcementLevel = Literal["mandatory", "advisory"]
MANDATORY: EnforcementLevel = "mandatory"
ADVISORY: EnforcementLevel = "advisory"
DISABLED = "disabled"
CONFIGURABLE_LEVELS = ("advisory", "mandatory", "remediate", "disabled")
"""Enforcement levels a policy pack config may set (Pulumi's apitype.EnforcementLevel)."""
ALL_POLICIES = "all"
"""The pack config key whose enforcement level applies to every policy."""

DEFAULT_MAX_GROUP_SIZE = 16
DEFAULT_REQUIRED_TAGS = ("Project", "Owner", "CostCenter")
DEFAULT_MIN_SPOT_SCORE = 4
"""EC2 scores a spot request 1 (not likely to succeed) to 10 (highly likely; EC2 API reference,
SpotPlacementScore, read 2026-11-28): below 4, the bottom third, the plan calls it unlikely."""


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
"""Stands in for a value unknown during preview (see gpucloud.policy.crossguard)."""


class UnknownInputError(Exception):
    """A rule needed an input that is unknown during preview, so it cannot decide yet.

    The pack turns it into the engine's own "can't run policy during preview" notice.
    """

    def __init__(self, path: tuple[Any, ...]):
        self.path = path
        super().__init__(f"the value at .{'.'.join(map(str, path))} can't be known during preview")


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


class PolicyConfigError(ValueError):
    """A policy config value or file that `pulumi preview --policy-pack-config` would refuse too."""


@dataclass(frozen=True)
class PolicyConfig:
    """Per-stack settings of the rules (the pack's ``PolicyConfigSchema`` values)."""

    max_group_size: int = DEFAULT_MAX_GROUP_SIZE
    required_tags: tuple[str, ...] = DEFAULT_REQUIRED_TAGS
    min_spot_score: int = DEFAULT_MIN_SPOT_SCORE

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> PolicyConfig:
        """Read the camelCase keys of a policy's config; absent keys keep their defaults."""
        values = values or {}
        max_group_size = values.get("maxGroupSize", DEFAULT_MAX_GROUP_SIZE)
        if isinstance(max_group_size, bool) or not isinstance(max_group_size, (int, float)):
            raise PolicyConfigError(f"maxGroupSize must be a number, got {max_group_size!r}")
        if not math.isfinite(max_group_size) or max_group_size < 1:
            raise PolicyConfigError(f"maxGroupSize must be a positive finite number, got {max_group_size!r}")
        required_tags = values.get("requiredTags", DEFAULT_REQUIRED_TAGS)
        if isinstance(required_tags, str) or not all(isinstance(tag, str) for tag in required_tags):
            raise PolicyConfigError(f"requiredTags must be a list of tag keys, got {required_tags!r}")
        min_spot_score = values.get("minSpotScore", DEFAULT_MIN_SPOT_SCORE)
        if isinstance(min_spot_score, bool) or not isinstance(min_spot_score, int) or not 1 <= min_spot_score <= 10:
            raise PolicyConfigError(f"minSpotScore must be a whole number from 1 to 10 (EC2's score scale), "
                                    f"got {min_spot_score!r}")
        return cls(max_group_size=int(max_group_size), required_tags=tuple(required_tags), min_spot_score=min_spot_score)


@dataclass(frozen=True)
class PackConfig:
    """A policy pack config document, applied the way the Pulumi CLI applies `--policy-pack-config`.

    Each top-level key names a policy, or ``all``; its value is an enforcement level string, or an
    object of the policy's properties with an optional ``enforcementLevel``. ``all`` sets every
    policy's level first, then a policy's own level wins. ``remediate`` runs a policy that only
    validates as mandatory, as pulumi-policy does.
    """

    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    levels: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_document(
        cls, document: Any, policy_names: Sequence[str], properties_of: Mapping[str, Sequence[str]] | None = None
    ) -> PackConfig:
        """Read a parsed config file; unknown policy names and bad values raise PolicyConfigError, and so
        does a property the policy's config schema lacks, when `properties_of` gives each policy's."""
        if not isinstance(document, Mapping):
            raise PolicyConfigError("the policy pack config must be a JSON object keyed by policy name")
        properties: dict[str, Mapping[str, Any]] = {}
        levels: dict[str, str] = {}
        for name, value in document.items():
            if name != ALL_POLICIES and name not in policy_names:
                raise PolicyConfigError(f"{name!r} is not a policy of this pack (known: {', '.join(policy_names)})")
            if isinstance(value, str):
                levels[name] = _level(name, value)
            elif isinstance(value, Mapping):
                values = dict(value)
                if "enforcementLevel" in values:
                    levels[name] = _level(name, values.pop("enforcementLevel"))
                if values and name != ALL_POLICIES:
                    if properties_of is not None:
                        _refuse_unknown_properties(name, values, properties_of.get(name, ()))
                    properties[name] = values
                    PolicyConfig.from_mapping(values)
            else:
                raise PolicyConfigError(f"{name!r}: {value!r} is not a valid value; must be a string or object")
        return cls(properties=properties, levels=levels)

    def enforcement_level(self, policy_name: str, default: EnforcementLevel) -> str:
        """The policy's level after the config: mandatory, advisory or disabled."""
        level = self.levels.get(policy_name) or self.levels.get(ALL_POLICIES) or default
        return MANDATORY if level == "remediate" else level

    def policy_config(self, policy_name: str) -> PolicyConfig:
        """The properties the config gives this policy, as the pack's ``args.get_config()`` would."""
        return PolicyConfig.from_mapping(self.properties.get(policy_name))


def _refuse_unknown_properties(policy_name: str, values: Mapping[str, Any], known: Sequence[str]) -> None:
    """A misspelt property (`maxGroupSiz`) would be ignored and the default silently kept: refuse it."""
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = (f"did you mean {close[0]!r}?" if close
                    else f"its properties: {', '.join(known)}" if known else "it takes no properties")
            raise PolicyConfigError(f"{policy_name!r}: {key!r} is not a property of this policy ({hint})")


def _level(policy_name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in CONFIGURABLE_LEVELS:
        raise PolicyConfigError(
            f"{policy_name!r}: {value!r} is not a valid enforcement level ({', '.join(CONFIGURABLE_LEVELS)})"
        )
    return value


Report = Callable[[str], None]
"""Receives one violation message about the resource being validated."""

StackReport = Callable[[str, "str | None"], None]
"""Receives one violation message and the URN it is about (None: the whole stack)."""

ResourceValidator = Callable[[str, Mapping[str, Any], Report, PolicyConfig | None], None]
StackValidator = Callable[[Sequence[PlannedResource], StackReport, PolicyConfig | None], None]
AppliesTo = Callable[[str], bool]
"""Whether a rule looks at resources of a type token."""


@dataclass(frozen=True)
class ResourceRule:
    """A rule checked on each resource on its own."""

    name: str
    description: str
    enforcement_level: EnforcementLevel
    validate: ResourceValidator
    applies_to: AppliesTo
    config_schema: Mapping[str, Mapping[str, Any]] | None = None
    """JSON-schema properties of the rule's config, camelCase as in the pack's config file."""


@dataclass(frozen=True)
class StackRule:
    """A rule that needs the whole stack (links between resources, resource options)."""

    name: str
    description: str
    enforcement_level: EnforcementLevel
    validate: StackValidator
    applies_to: AppliesTo
    """The types of the resources it reports on."""
    config_schema: Mapping[str, Mapping[str, Any]] | None = None
