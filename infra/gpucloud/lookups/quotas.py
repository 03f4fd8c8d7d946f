"""EC2 vCPU quotas: what the stack's groups need at minSize and maxSize against the account's values.

New accounts often have 0 vCPUs for P instances: `pulumi up` then succeeds and no instance ever
starts. The plan sums vCPUs per quota over all groups (the on-demand base and on-demand share on the
on-demand quota, the spot share on the spot quota) and compares with the applied values.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpucloud.config import StackSettings
from gpucloud.config.groups import GroupConfig, purchase_split
from gpucloud.lookups.facts import AwsLookups, InstanceTypeFacts
from gpucloud.lookups.problems import Problems

ON_DEMAND_QUOTAS = {
    "P": ("L-417A185B", "Running On-Demand P instances"),
    "G": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "Standard": ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
}
SPOT_QUOTAS = {
    "P": ("L-7212CCBC", "All P Spot Instance Requests"),
    "G": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    "Standard": ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
}
"""EC2 vCPU quota codes and names (service code `ec2`), as read on 2026-11-24: L-1216C47A and its
name from the AWS CLI user guide's Service Quotas examples (`get-aws-default-service-quota
--service-code ec2 --quota-code L-1216C47A`, https://docs.aws.amazon.com/cli/latest/userguide/
cli_service-quotas_code_examples.html); the P, G and VT and spot codes and names from public tools
that query them in real accounts (search corpus files 58082347583, "verified live 2026-07-27",
71351104870 and 60649601317), not from an AWS page: check them with
`aws service-quotas list-service-quotas --service-code ec2` when in doubt."""


def quota_family(instance_type: str) -> str | None:
    """Which vCPU quota a type counts against: P, G (G and VT), Standard, or None for families with
    quotas of their own (Inf, Trn, DL, F, X, high memory), which the plan does not check. The family
    name decides, not the GPU count: the fractional g6f and gr6f (GPU count 0) are G types like g6."""
    family = instance_type.split(".", 1)[0]
    if family.startswith("p"):
        return "P"
    if family.startswith(("g", "vt")):
        return "G"
    if family[0] in "acdhimrtz" and not family.startswith(("inf", "dl", "trn")):
        return "Standard"
    return None


@dataclass(frozen=True)
class QuotaNeed:
    code: str
    name: str
    groups: tuple[str, ...]
    vcpus_at_min: int
    vcpus_at_max: int


def quota_needs(groups: list[tuple[GroupConfig, tuple[InstanceTypeFacts, ...]]]) -> list[QuotaNeed]:
    """vCPUs each quota must hold at minSize (at the group's smallest type, so a failure is certain)
    and at maxSize (at its largest type, as the group may launch it)."""
    at_min: dict[tuple[str, str], int] = defaultdict(int)
    at_max: dict[tuple[str, str], int] = defaultdict(int)
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    for group, types in groups:
        by_family: dict[str, list[int]] = defaultdict(list)
        for facts in types:
            family = quota_family(facts.name)
            if family:
                by_family[family].append(facts.vcpus)
        for family, vcpus in by_family.items():
            for capacity, table, per_instance in ((group.min_size, at_min, min(vcpus)), (group.max_size, at_max, max(vcpus))):
                on_demand, spot = purchase_split(capacity, group.on_demand_base_capacity, group.spot_percent)
                for quotas, count in ((ON_DEMAND_QUOTAS, on_demand), (SPOT_QUOTAS, spot)):
                    key = quotas[family]
                    table[key] += count * per_instance
                    if count and group.name not in names[key]:
                        names[key].append(group.name)
    return [
        QuotaNeed(code=code, name=name, groups=tuple(names[(code, name)]), vcpus_at_min=at_min[(code, name)],
                  vcpus_at_max=at_max[(code, name)])
        for code, name in sorted(names)
        if at_max[(code, name)] or at_min[(code, name)]
    ]


def increase_command(code: str, vcpus: int, region: str) -> str:
    return (
        f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} "
        f"--desired-value {vcpus} --region {region}"
    )


def check_quotas(settings: StackSettings, lookups: AwsLookups, groups, problems: Problems) -> list[str]:
    """Each EC2 vCPU quota the groups draw on against its applied value: below minSize is a failure,
    below maxSize a warning, both with the command that asks for more."""
    failures, unknown = [], []
    for need in quota_needs(groups):
        available = lookups.ec2_quota(need.code)
        if available is None:
            unknown.append(need.code)
            continue
        where = f"groups {', '.join(need.groups)} need"
        for scenario, vcpus in (("minSize", need.vcpus_at_min), ("maxSize", need.vcpus_at_max)):
            if vcpus <= available:
                continue
            message = (f"EC2 quota {need.name} ({need.code}): {where} {vcpus} vCPUs at {scenario}, the account has "
                       f"{available:g} in {settings.region}; no instance beyond it ever starts. Ask for more: "
                       f"{increase_command(need.code, vcpus, settings.region)}")
            if scenario == "minSize":
                failures.append(message)
                break
            problems.warn("groups", message)
    if unknown:
        problems.warn("groups", f"EC2 vCPU quotas were not checked ({', '.join(unknown)}): their values are not "
                      "known here (offline, give the plan account facts with quotas; online, the deploying role "
                      "needs servicequotas:GetServiceQuota)")
    return failures
