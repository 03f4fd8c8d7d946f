"""What an offline plan holds: the resources a stack would create and what the checks found,
in the layout `pulumi preview --json` prints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpucloud.policy import Violation, enforcement_levels
from gpucloud.pricing import CostEstimate
from gpucloud.testing import AppliedResource
from gpucloud.testing.input_coverage import set_properties
from gpucloud.testing.provider_rules import covered

PROJECT = "gpu-cloud"
POLICY_PACK = "gpu-cloud"
"""The pack in policies/ (PulumiPolicy.yaml), whose rules the plan runs."""


@dataclass(frozen=True)
class PlanFinding:
    """Something the plan found besides the resources: a budget check, a policy violation, a warning."""

    source: str
    severity: str
    """`failure` makes the plan exit 1; `warning` and `info` are printed only."""
    rule: str
    message: str
    urn: str | None = None


@dataclass
class Plan:
    """What a stack would create, with everything later checks attach to it."""

    project: str
    stack: str
    region: str
    resources: list[AppliedResource]
    outputs: dict[str, Any]
    findings: list[PlanFinding] = field(default_factory=list)
    cost_estimate: CostEstimate | None = None
    policy_violations: list[Violation] = field(default_factory=list)
    policy_levels: dict[str, str] = field(default_factory=enforcement_levels)
    """Each policy of the pack and its enforcement level in this plan (disabled ones did not run)."""
    purchase_options: list[dict[str, Any]] = field(default_factory=list)
    """Each group's on-demand/spot split (`plan/purchase.py`); empty for a program that is not gpu-cloud's."""
    image_software: list[dict[str, Any]] = field(default_factory=list)
    """Each group's features and the image software they rely on (`plan/image_software.py`)."""
    capacity: list[dict[str, Any]] = field(default_factory=list)
    """Each group's capacity: types x zones, Spot placement scores, verdict, allocation, fixes (`plan/capacity_line.py`)."""
    cold_start: list[dict[str, Any]] = field(default_factory=list)
    """Each group's cold-start budget: phases, timers, fixes (`plan/cold_start.py`)."""
    access: dict[str, Any] | None = None
    """The recorded calls checked against the plan's policies (`plan/access.py`); None when not checked."""

    @property
    def policies_run(self) -> list[str]:
        return [name for name, level in self.policy_levels.items() if level != "disabled"]

    @property
    def failed(self) -> bool:
        """A mandatory policy violation or a failed budget check."""
        return any(finding.severity == "failure" for finding in self.findings) or any(
            violation.mandatory for violation in self.policy_violations
        )

    @property
    def unchecked_inputs(self) -> list[dict[str, str]]:
        """Each input property a stack sets that reached AWS through no checked call and that no
        cited provider rule checks (`testing/input_coverage.py`)."""
        return [
            {"urn": resource.urn, "type": resource.type, "property": path}
            for resource in self.resources
            for path in resource.unchecked_inputs
        ]

    def input_coverage(self) -> dict[str, Any]:
        """How many input properties the stack sets, how many a cited provider rule checks, how
        many only the engine's own checks saw (types moto lacks, recorded not validated), and
        which were neither sent to AWS through a checked call nor checked by a provider rule."""
        unchecked = self.unchecked_inputs
        properties = [(resource, path) for resource in self.resources if resource.custom
                      for path in set_properties(resource.inputs)]
        return {
            "properties": len(properties),
            "checkedByProviderRule": sum(1 for resource, path in properties if covered(resource.type, path)),
            "checkedByEngineOnly": sum(
                1 for resource, path in properties
                if not resource.validated and not covered(resource.type, path) and path not in resource.unchecked_inputs
            ),
            "neither": len(unchecked),
            "unchecked": unchecked,
        }

    @property
    def stack_urn(self) -> str:
        return f"urn:pulumi:{self.stack}::{self.project}::pulumi:pulumi:Stack::{self.project}-{self.stack}"

    def to_preview_json(self) -> dict[str, Any]:
        """The layout of `pulumi preview --json`, so scripts work on both."""
        steps = [
            {
                "op": "create",
                "urn": self.stack_urn,
                "newState": {"urn": self.stack_urn, "type": "pulumi:pulumi:Stack", "custom": False, "inputs": {}, "outputs": {}},
            }
        ]
        for resource in self.resources:
            state: dict[str, Any] = {
                "urn": resource.urn,
                "custom": resource.custom,
                "type": resource.type,
                "parent": resource.parent or self.stack_urn,
                "inputs": resource.inputs,
                "outputs": resource.state if resource.custom else {},
            }
            if resource.id:
                state["id"] = resource.id
            if resource.protect:
                state["protect"] = True
            if resource.retain_on_delete:
                state["retainOnDelete"] = True
            if resource.ignore_changes:
                state["ignoreChanges"] = list(resource.ignore_changes)
            if not resource.validated:
                state["gpucloudNotValidated"] = resource.note
            steps.append({"op": "create", "urn": resource.urn, "newState": state})
        document: dict[str, Any] = {
            "steps": steps,
            "changeSummary": {"create": len(steps)},
            "outputs": self.outputs,
            "findings": [
                {key: value for key, value in vars(finding).items() if value is not None} for finding in self.findings
            ],
        }
        document["policyViolations"] = [
            {
                "policyName": violation.policy_name,
                "enforcementLevel": violation.enforcement_level,
                "urn": violation.urn,
                "message": violation.message,
            }
            for violation in self.policy_violations
        ]
        document["inputCoverage"] = self.input_coverage()
        if self.purchase_options:
            document["purchaseOptions"] = self.purchase_options
        if self.image_software:
            document["imageSoftware"] = self.image_software
        if self.capacity:
            document["capacity"] = self.capacity
        if self.cold_start:
            document["coldStart"] = self.cold_start
        if self.access is not None:
            document["access"] = self.access
        if self.cost_estimate:
            document["costEstimate"] = self.cost_estimate.to_dict()
        return document


def provider_rule_findings(resources: list[AppliedResource]) -> list[PlanFinding]:
    """One failure per input the bridged provider's own rules refuse: `pulumi preview` stops there."""
    return [
        PlanFinding(source="provider", severity="failure", rule="provider-rule", message=violation.message, urn=resource.urn)
        for resource in resources
        for violation in resource.provider_violations
    ]


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str)
