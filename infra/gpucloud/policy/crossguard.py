"""CrossGuard policies wrapping the gpucloud review-gate rules (gpucloud.policy).

Each entry of ``gpucloud.policy.RULES`` becomes one ``ResourceValidationPolicy`` or
``StackValidationPolicy`` here, so ``pulumi preview --policy-pack policies`` and
``gpucloud plan`` enforce the same code.  It lives in the package (not in policies/) so a team's
own repository wraps it the same way (``gpucloud init`` writes that policies/ folder).  Importing
it needs pulumi-policy and has no side effects; a pack's ``__main__.py`` serves ``POLICIES``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from gpucloud.policy import (
    RULES,
    UNKNOWN,
    PlannedResource,
    PolicyConfig,
    ResourceRule,
    StackRule,
    UnknownInputError,
)
from gpucloud.policy.values import known_only

PACK_NAME = "gpu-cloud"

_ENFORCEMENT_LEVELS = {
    "mandatory": EnforcementLevel.MANDATORY,
    "advisory": EnforcementLevel.ADVISORY,
}


def _config_schema(rule: ResourceRule | StackRule) -> PolicyConfigSchema | None:
    if not rule.config_schema:
        return None
    return PolicyConfigSchema(properties={key: dict(value) for key, value in rule.config_schema.items()})


def resource_policy(rule: ResourceRule) -> ResourceValidationPolicy:
    """A resource policy that runs the rule on the engine's inputs, unknowns included.

    The rule sees UNKNOWN where preview cannot know a value yet. A rule that can decide
    anyway reads it with ``peek`` (an unknown kmsKeyId with encryption on is this stack's
    key); any other read raises UnknownInputError, re-raised here as the engine's own
    UnknownValueError for that path, which it reports as "can't run policy during preview";
    ``pulumi up`` sees the resolved values.
    """

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        config = PolicyConfig.from_mapping(args.get_config())
        props = known_only(known_values(args.props))
        try:
            rule.validate(args.resource_type, props, lambda message: report_violation(message, None), config)
        except UnknownInputError as error:
            raise _engine_unknown(args.props, error) from None

    return ResourceValidationPolicy(**_policy_fields(rule, validate))


def _engine_unknown(props: Any, error: UnknownInputError) -> UnknownValueError:
    """The engine proxy's own error for the unknown the rule hit (its type and path in the message)."""
    value = props
    try:
        for key in error.path:
            value = value[key]
    except UnknownValueError as unknown:
        return unknown
    except (KeyError, IndexError, TypeError):
        pass  # a path into a value the rule derived; name it as the rule saw it
    return UnknownValueError(UNKNOWN_STRING_VALUE, [str(key) for key in error.path])


def known_values(value: Any) -> Any:
    """Copy engine proxies into plain dicts/lists, with UNKNOWN for values preview cannot know."""
    if isinstance(value, Mapping):
        plain = {}
        for key in value:
            try:
                plain[key] = known_values(value[key])
            except UnknownValueError:
                plain[key] = UNKNOWN
        return plain
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for index in range(len(value)):
            try:
                items.append(known_values(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


def planned_resource(resource: PolicyResource) -> PlannedResource:
    """The rules' view of a stack resource.

    pulumi-policy 1.21 exposes ``protect`` but not ``retainOnDelete`` (neither
    PolicyResourceOptions nor the engine's AnalyzerResourceOptions carry it), so
    retainOnDelete is reported as unknown (None) here.
    """
    return PlannedResource(
        urn=resource.urn,
        type=resource.resource_type,
        name=resource.name,
        props=known_values(resource.props),
        options={"protect": bool(resource.opts.protect) if resource.opts else False, "retainOnDelete": None},
        property_dependencies={
            prop: [dependency.urn for dependency in dependencies]
            for prop, dependencies in (resource.property_dependencies or {}).items()
        },
    )


def stack_policy(rule: StackRule) -> StackValidationPolicy:
    """A stack policy that runs the rule over every resource of the stack."""

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        config = PolicyConfig.from_mapping(args.get_config())
        resources = [planned_resource(resource) for resource in args.resources]
        rule.validate(resources, lambda message, urn=None: report_violation(message, urn), config)

    return StackValidationPolicy(**_policy_fields(rule, validate))


def _policy_fields(rule: ResourceRule | StackRule, validate: Any) -> dict[str, Any]:
    """What a CrossGuard policy of either kind takes from the rule, around its `validate`."""
    return {
        "name": rule.name,
        "description": rule.description,
        "validate": validate,
        "enforcement_level": _ENFORCEMENT_LEVELS[rule.enforcement_level],
        "config_schema": _config_schema(rule),
    }


def _policy(rule: ResourceRule | StackRule) -> Policy:
    return resource_policy(rule) if isinstance(rule, ResourceRule) else stack_policy(rule)


POLICIES: list[Policy] = [_policy(rule) for rule in RULES]
POLICIES_BY_NAME: dict[str, Policy] = {policy.name: policy for policy in POLICIES}
