"""The review gate: policy rules shared by ``gpucloud plan`` and the CrossGuard pack in policies/.

The offline plan calls ``evaluate(resources, config)``; the pack wraps each entry of
``RULES`` as a ResourceValidationPolicy or StackValidationPolicy.
"""

from .model import (
    ADVISORY,
    MANDATORY,
    UNKNOWN,
    EnforcementLevel,
    PlannedResource,
    PolicyConfig,
    ResourceRule,
    StackRule,
    Violation,
)
from .registry import RESOURCE_RULES, RULES, STACK_RULES, evaluate

__all__ = [
    "ADVISORY",
    "MANDATORY",
    "RESOURCE_RULES",
    "RULES",
    "STACK_RULES",
    "UNKNOWN",
    "EnforcementLevel",
    "PlannedResource",
    "PolicyConfig",
    "ResourceRule",
    "StackRule",
    "Violation",
    "evaluate",
]
