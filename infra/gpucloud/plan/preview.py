"""`gpucloud plan`: the offline preview. Runs the program on the moto engine and reports what
it would create, as a tree like `pulumi preview` or as `pulumi preview --json`."""

from __future__ import annotations

import datetime
import runpy
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpucloud.config import ConfigError, StackSettings
from gpucloud.config.regions import region_problem
from gpucloud.plan.access import check_access, load_calls
from gpucloud.plan.capacity_line import check_capacity, recorded_spot_prices, scored_groups_not_in_stack
from gpucloud.plan.findings import (
    accepted_lint_findings,
    check_policies,
    cost_findings,
    reserved_capacity,
    spot_capacity_findings,
    with_matched_types,
)
from gpucloud.plan.cold_start import cold_start, cold_start_findings
from gpucloud.plan.image_software import image_software
from gpucloud.plan.model import PROJECT, Plan, PlanFinding, provider_rule_findings
from gpucloud.plan.purchase import purchase_options
from gpucloud.plan.program_source import (
    ProgramError,
    ProgramFailed,
    load_engine_handlers,
    locate,
    program_environment,
    read_stack_config,
)
from gpucloud.policy import PackConfig, PolicyConfig, Violation, enforcement_levels
from gpucloud.testing import Deployment, moto_account, run_program
from gpucloud.testing.facts import AccountFacts, FactsLookups, seed_account


def _from_deployment(
    deployment: Deployment, region: str, policy_config: PolicyConfig | PackConfig | None
) -> Plan:
    """The plan of a deployment whose moto account is still open (the spot rule asks it for zones)."""
    plan = Plan(
        project=deployment.project,
        stack=deployment.stack,
        region=region,
        resources=deployment.resources,
        outputs=deployment.outputs,
        policy_violations=check_policies(deployment.resources, policy_config),
        policy_levels=enforcement_levels(policy_config),
        findings=[
            PlanFinding(source="program", severity="failure", rule="program-error", message=error)
            for error in deployment.errors
        ]
        + [
            PlanFinding(source="program", severity="warning", rule="program-warning", message=warning)
            for warning in deployment.warnings
        ]
        + provider_rule_findings(deployment.resources)
        + spot_capacity_findings(deployment.resources, _group_subnet_zones(deployment)),
    )
    if "iam-least-privilege" in plan.policies_run:
        plan.findings.extend(accepted_lint_findings(deployment.resources))
    return plan


def _group_subnet_zones(deployment: Deployment) -> dict[str, str]:
    """The zone of each subnet an Auto Scaling group launches into, what the spot rule counts pools
    by, asked of the account for those subnets only (every subnet of the account included the
    default VPC's, one per zone, for nothing)."""
    wanted = sorted({subnet for group in deployment.of_type("aws:autoscaling/group:Group")
                     for subnet in group.inputs.get("vpcZoneIdentifiers") or []})
    if not wanted:
        return {}
    subnets = deployment.client("ec2").describe_subnets(Filters=[{"Name": "subnet-id", "Values": wanted}])["Subnets"]
    return {subnet["SubnetId"]: subnet["AvailabilityZone"] for subnet in subnets}


def plan_stack(
    settings: StackSettings,
    policy_config: PolicyConfig | PackConfig | None = None,
    facts: AccountFacts | None = None,
    now: datetime.datetime | None = None,
) -> Plan:
    """Run the gpu-cloud program for one stack on a fresh moto account (seeded with the account
    facts, when given), check the policies, price it. `now` (UTC) ages the capacity facts."""
    from gpucloud.lookups import ResolvedStack, resolve_stack
    from gpucloud.program import build

    resolved: list[ResolvedStack] = []
    capacity_checked: list[tuple[list[dict[str, Any]], list[Violation]]] = []
    now = now or datetime.datetime.now(datetime.timezone.utc)
    capacity = facts.capacity if facts else None

    def program() -> None:
        lookups = FactsLookups(facts)
        resolved.append(resolve_stack(settings, lookups))
        # inside the program: the fixes' offerings are an invoke, asked only where a fix reads them
        capacity_checked.append(check_capacity(resolved[0].groups, capacity, settings.region, policy_config, now,
                                               OfferedWhenRead(lookups)))
        build(settings, resolved[0])

    with moto_account(settings.region) as account:
        # without facts too: what no fact says is then not known (the service-linked role), not missing
        seed_account(account, facts or AccountFacts())
        deployment = run_program(program, account, project=PROJECT, stack=settings.stack)
        deployer = account.client("sts").get_caller_identity()["Arn"]
        plan = _from_deployment(deployment, settings.region, policy_config)
        offerings = {group.config.name: group.block_offering for group in resolved[0].groups if group.block_offering}
        reserved = reserved_capacity(settings, account.capacity_reservations, offerings)
        if any(group.capacity.reservations or group.capacity.capacity_block for group in settings.config.groups):
            plan.findings.append(PlanFinding(
                source="engine", severity="info", rule="not-validated",
                message="capacity reservations, Capacity Blocks and their offerings were answered from the account "
                        "facts: moto has none of them, so only the references to them were checked (not validated by moto)",
            ))
    if facts is not None:
        plan.findings.insert(0, _facts_finding(facts))
    gpus = {kind.name: kind.node_gpu_count for group in resolved[0].groups for kind in group.instance_types}
    plan.capacity, capacity_violations = capacity_checked[0]
    plan.policy_violations.extend(capacity_violations)
    plan.findings.extend(_unknown_scored_groups(resolved[0].groups, capacity))
    recorded = recorded_spot_prices(resolved[0].groups, capacity, settings.region, now)
    plan.cost_estimate, budget = cost_findings(with_matched_types(settings, plan.outputs), reserved, gpus, recorded)
    plan.findings.extend(budget)
    plan.access, access_findings = check_access(settings, plan.resources, load_calls(), plan.outputs, deployer)
    plan.findings.extend(access_findings)
    plan.purchase_options = purchase_options(settings.config)
    plan.image_software = image_software(settings.config)
    plan.cold_start = cold_start(settings.config, {group.config.name: all(kind.instance_store_disks for kind in group.instance_types)
                                                   for group in resolved[0].groups},
                                 facts.ecr_image_sizes if facts else None)
    plan.findings.extend(cold_start_findings(plan.cold_start))
    return plan


class OfferedWhenRead:
    """The GPU types some zone of the region offers (`offered_gpu_types`), asked of the lookups the
    first time a capacity fix reads them. Only a scored group whose capacity is not good gets
    fixes, and the answer is every offering of the region by zone (6,436 in us-east-1): asked on
    every plan, it took a sixth of a warm `vision-train` plan that never read it (2026-11-29)."""

    def __init__(self, lookups: FactsLookups):
        self._lookups = lookups
        self._types: frozenset[str] | None = None

    def __contains__(self, name: object) -> bool:
        if self._types is None:
            self._types = frozenset(self._lookups.offered_gpu_types())
        return name in self._types


def _unknown_scored_groups(groups, capacity) -> list[PlanFinding]:
    """One line for spot scores the facts hold for groups the stack does not have: the capacity
    line reads none of them, which would else pass unsaid."""
    unknown = scored_groups_not_in_stack(groups, capacity)
    if not unknown:
        return []
    return [PlanFinding(
        source="capacity", severity="warning", rule="capacity-scores-unknown-group",
        message=f"the account facts' capacity.spotScores score group(s) {', '.join(unknown)}, which the stack does not "
                f"have (its groups: {', '.join(group.config.name for group in groups)}): their scores are not read; "
                "take `gpucloud account snapshot` again, or correct the group name there")]


def _facts_finding(facts: AccountFacts) -> PlanFinding:
    stale = facts.age_warning()
    taken = (f"account facts of {facts.snapshot.account_id} taken {facts.snapshot.taken_on}" if facts.snapshot
             else "account facts without a snapshot date (snapshot.takenOn)")
    return PlanFinding(source="facts", severity="warning" if stale else "info", rule="account-facts",
                       message=stale or f"planned against {taken}")


def plan_program(
    program: Callable[[], None],
    *,
    stack: str = "dev",
    region: str = "us-east-1",
    config: Mapping[str, Any] | None = None,
    project: str = PROJECT,
    policy_config: PolicyConfig | PackConfig | None = None,
    record_unknown_types: bool = False,
) -> Plan:
    """Run any Pulumi program (a team's own, say) through the same offline plan and policy checks.

    A program that raises is reported as ProgramFailed (the original error is its cause), except
    gpu-cloud's own ConfigError, which stays a config error. A resource type the engine lacks
    fails the plan unless `record_unknown_types` records it as not validated.
    """
    with moto_account(region) as account:
        try:
            deployment = run_program(
                program,
                account,
                project=project,
                stack=stack,
                config=config,
                record_unknown_types=record_unknown_types,
            )
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
    handlers: Sequence[str | Path] = (),
    record_unknown_types: bool = False,
) -> Plan:
    """`plan_program` for a program on disk, run as `pulumi preview` runs it.

    ``path`` is a program file or a folder (its Pulumi.yaml `main`, else its `__main__.py`).
    ``config_file`` is a `Pulumi.<stack>.yaml` whose `config:` map reaches the program as under
    Pulumi (bare keys in the project's namespace) and whose name gives the stack, unless ``stack``
    is given; ``config`` adds values on top. The region is ``region``, else `aws:region`, else
    us-east-1. ``handlers`` are files that register engine handlers, run first. Raises ProgramError
    when the program cannot be found or configured, and ProgramFailed (a ProgramError) when it raises.
    """
    source = locate(path)
    load_engine_handlers(handlers)
    project = source.project or PROJECT
    values = dict(source.config_defaults)
    stack_name = "dev"
    if config_file is not None:
        stack_name, stack_values = read_stack_config(config_file, project)
        values.update(stack_values)
    values.update(config or {})
    region_flag = region
    region = region or (values.get("aws:region") if isinstance(values.get("aws:region"), str) else None) or "us-east-1"
    unknown_region = region_problem(region)
    if unknown_region:
        raise ProgramError(f"{'--region' if region_flag else f'{config_file or path}: aws:region'}: {unknown_region}")
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
                record_unknown_types=record_unknown_types,
            )
        except ProgramFailed as failed:
            raise ProgramFailed(str(path), failed.error) from failed.error


