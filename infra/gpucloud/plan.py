"""`gpucloud plan`: the offline preview. Runs the program on the moto engine and reports what
it would create, as a tree like `pulumi preview` or as `pulumi preview --json`."""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucloud.config import ConfigError, StackSettings
from gpucloud.policy import PackConfig, PlannedResource, PolicyConfig, Violation, enforcement_levels, evaluate
from gpucloud.policy.rules import accepted_iam_findings
from gpucloud.program_source import ProgramFailed, locate, program_environment, read_stack_config
from gpucloud.pricing import CostEstimate, PricingError, budget_findings, estimate_stack, unpriced_finding
from gpucloud.testing import AppliedResource, Deployment, moto_account, run_program

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
        if self.cost_estimate:
            document["costEstimate"] = self.cost_estimate.to_dict()
        return document


def check_policies(
    resources: list[AppliedResource], config: PolicyConfig | PackConfig | None = None
) -> list[Violation]:
    """Every policy of the review gate over every planned resource, as `pulumi preview --policy-pack` runs them."""
    planned = [
        PlannedResource(
            urn=resource.urn,
            type=resource.type,
            name=resource.name,
            props=resource.state,
            options={"protect": resource.protect, "retainOnDelete": resource.retain_on_delete},
        )
        for resource in resources
        if resource.custom
    ]
    return evaluate(planned, config)


def accepted_lint_findings(resources: list[AppliedResource]) -> list[PlanFinding]:
    """Parliament findings of medium severity or worse that pass because ACCEPTED_FINDINGS names them,
    one info line each with its reason, so a reviewer sees every exception the gate made."""
    findings = []
    for resource in resources:
        if not resource.custom:
            continue
        for where, finding in accepted_iam_findings(resource.type, resource.state):
            findings.append(
                PlanFinding(
                    source="iam-lint",
                    severity="info",
                    rule="iam-least-privilege",
                    urn=resource.urn,
                    message=(
                        f"IAM {where}: accepted parliament {finding.issue} ({finding.severity}) on "
                        f"{', '.join(sorted(finding.actions))}: {finding.accepted_reason}"
                    ),
                )
            )
    return findings


def spot_capacity_findings(resources: list[AppliedResource], subnet_zones: Mapping[str, str]) -> list[PlanFinding]:
    """Spot groups with one instance type or one availability zone run dry when that single pool is
    reclaimed (a spot pool is an instance type in a zone; two subnets of one zone are one pool)."""
    findings = []
    for resource in resources:
        if resource.type != "aws:autoscaling/group:Group":
            continue
        policy = resource.inputs.get("mixedInstancesPolicy") or {}
        distribution = policy.get("instancesDistribution") or {}
        above_base_on_demand = distribution.get("onDemandPercentageAboveBaseCapacity", 100)
        if not policy or above_base_on_demand >= 100:
            continue
        types = [o.get("instanceType") for o in (policy.get("launchTemplate") or {}).get("overrides", [])]
        zones = {subnet_zones.get(subnet, subnet) for subnet in resource.inputs.get("vpcZoneIdentifiers") or []}
        if len(types) < 2 or len(zones) < 2:
            findings.append(
                PlanFinding(
                    source="capacity",
                    severity="warning",
                    rule="spot-capacity-risk",
                    urn=resource.urn,
                    message=(
                        f"{resource.inputs.get('name', resource.name)} uses spot with {len(types)} instance type(s) "
                        f"in {len(zones)} availability zone(s): when that spot pool runs short the group cannot "
                        "launch (capacity shortage); list at least two instance types and subnets in two zones"
                        + (" (a multi-node group stays in the one zone of its cluster placement group)" if resource.inputs.get("placementGroup") else "")
                    ),
                )
            )
    return findings


def _from_deployment(
    deployment: Deployment, region: str, policy_config: PolicyConfig | PackConfig | None
) -> Plan:
    """The plan of a deployment whose moto account is still open (the spot rule asks it for zones)."""
    subnets = deployment.client("ec2").describe_subnets()["Subnets"]
    subnet_zones = {subnet["SubnetId"]: subnet["AvailabilityZone"] for subnet in subnets}
    plan = Plan(
        project=deployment.project,
        stack=deployment.stack,
        region=region,
        resources=deployment.resources,
        outputs=deployment.outputs,
        policy_violations=check_policies(deployment.resources, policy_config),
        policy_levels=enforcement_levels(policy_config),
        findings=spot_capacity_findings(deployment.resources, subnet_zones),
    )
    if "iam-least-privilege" in plan.policies_run:
        plan.findings.extend(accepted_lint_findings(deployment.resources))
    return plan


def cost_findings(settings: StackSettings) -> tuple[CostEstimate | None, list[PlanFinding]]:
    """The stack's cost estimate and what it means for the budget. A price the catalog lacks makes the
    estimate partial (named in a warning) but never switches the budget check off."""
    try:
        estimate = estimate_stack(settings.config, settings.region)
    except PricingError as error:
        return None, [
            PlanFinding(
                source="cost",
                severity="warning",
                rule="no-cost-estimate",
                message=f"no cost estimate, so the budget is not checked: {error}",
            )
        ]
    partial = unpriced_finding(estimate)
    findings = [PlanFinding(source="cost", severity=partial.severity, rule=partial.rule, message=partial.message)] if partial else []
    findings += [
        PlanFinding(source="budget", severity=finding.severity, rule=finding.rule, message=finding.message)
        for finding in budget_findings(estimate, settings.config.budget.monthly_usd)
    ]
    return estimate, findings


def plan_stack(settings: StackSettings, policy_config: PolicyConfig | PackConfig | None = None) -> Plan:
    """Run the gpu-cloud program for one stack on a fresh moto account, check the policies, price it."""
    from gpucloud.program import build

    with moto_account(settings.region) as account:
        deployment = run_program(lambda: build(settings), account, project=PROJECT, stack=settings.stack)
        plan = _from_deployment(deployment, settings.region, policy_config)
    plan.cost_estimate, budget = cost_findings(settings)
    plan.findings.extend(budget)
    return plan


def plan_program(
    program: Callable[[], None],
    *,
    stack: str = "dev",
    region: str = "us-east-1",
    config: Mapping[str, Any] | None = None,
    project: str = PROJECT,
    policy_config: PolicyConfig | PackConfig | None = None,
) -> Plan:
    """Run any Pulumi program (a team's own, say) through the same offline plan and policy checks.

    A program that raises is reported as ProgramFailed (the original error is its cause), except
    gpu-cloud's own ConfigError, which stays a config error.
    """
    with moto_account(region) as account:
        try:
            deployment = run_program(program, account, project=project, stack=stack, config=config)
        except ConfigError:
            raise
        except Exception as error:
            raise ProgramFailed(getattr(program, "__qualname__", repr(program)), error) from error
        return _from_deployment(deployment, region, policy_config)


def plan_program_file(
    path: str | Path,
    *,
    config_file: str | Path | None = None,
    stack: str | None = None,
    region: str | None = None,
    config: Mapping[str, Any] | None = None,
    policy_config: PolicyConfig | PackConfig | None = None,
) -> Plan:
    """`plan_program` for a program on disk, run as `pulumi preview` runs it.

    ``path`` is a program file or a folder (its Pulumi.yaml `main`, else its `__main__.py`).
    ``config_file`` is a `Pulumi.<stack>.yaml` whose `config:` map reaches the program as under
    Pulumi (bare keys in the project's namespace) and whose name gives the stack, unless ``stack``
    is given; ``config`` adds values on top. The region is ``region``, else `aws:region`, else
    us-east-1. Raises ProgramError when the program cannot be found or configured, and
    ProgramFailed (a ProgramError) when it raises.
    """
    source = locate(path)
    project = source.project or PROJECT
    values = dict(source.config_defaults)
    stack_name = "dev"
    if config_file is not None:
        stack_name, stack_values = read_stack_config(config_file, project)
        values.update(stack_values)
    values.update(config or {})
    region = region or (values.get("aws:region") if isinstance(values.get("aws:region"), str) else None) or "us-east-1"
    values["aws:region"] = region
    entry = str(source.entry.resolve())

    def program() -> None:
        runpy.run_path(entry, run_name="__main__")

    with program_environment(source):
        try:
            return plan_program(
                program,
                stack=stack or stack_name,
                region=region,
                config=values,
                project=project,
                policy_config=policy_config,
            )
        except ProgramFailed as failed:
            raise ProgramFailed(str(path), failed.error) from failed.error


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str)
