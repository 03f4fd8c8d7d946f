"""The review gate: policy rules shared by ``gpucloud plan`` and the CrossGuard pack in policies/.

The offline plan calls ``evaluate(resources, config)``; the pack wraps each entry of
``RULES`` as a ResourceValidationPolicy or StackValidationPolicy.  ``check(type, inputs)``
runs the resource rules on one resource as plain Python.
"""

from .model import (
    ADVISORY,
    DISABLED,
    MANDATORY,
    UNKNOWN,
    EnforcementLevel,
    PackConfig,
    PlannedResource,
    PolicyConfig,
    PolicyConfigError,
    ResourceRule,
    StackRule,
    UnknownInputError,
    Violation,
)
from .registry import RESOURCE_RULES, RULES, STACK_RULES, check, enforcement_levels, evaluate

__all__ = [
    "ADVISORY",
    "DISABLED",
    "MANDATORY",
    "RESOURCE_RULES",
    "RULES",
    "STACK_RULES",
    "UNKNOWN",
    "EnforcementLevel",
    "PackConfig",
    "PlannedResource",
    "PolicyConfig",
    "PolicyConfigError",
    "ResourceRule",
    "StackRule",
    "UnknownInputError",
    "Violation",
    "check",
    "enforcement_levels",
    "evaluate",
]
