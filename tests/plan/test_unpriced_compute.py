"""A stack whose GPU compute the catalog cannot price fails the budget check unless it accepts that."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from gpucloud.config import ConfigError, load_stack_file
from gpucloud.plan import Plan, PlanFinding, cost_findings
from gpucloud.plan.view import render


def stack(tmp_path, region: str, budget: str = "{monthlyUsd: 100000}") -> str:
    path = tmp_path / "Pulumi.faraway.yaml"
    path.write_text(
        f"config:\n  aws:region: {region}\n  gpu-cloud:project: faraway\n  gpu-cloud:owner: a@example.com\n"
        f"  gpu-cloud:costCenter: cc\n  gpu-cloud:budget: {budget}\n"
        "  gpu-cloud:groups:\n"
        "    - {name: big, instanceTypes: [g5.xlarge], minSize: 1, desiredCapacity: 1, maxSize: 2}\n"
    )
    return str(path)


def rules(findings) -> dict[str, PlanFinding]:
    return {finding.rule: finding for finding in findings}


def test_unpriced_gpu_compute_fails_a_budget_the_priced_part_stays_under(tmp_path):
    # ca-west-1: a commercial region outside the catalog (its instance source prices no supported GPU
    # type there), so it has no row for g5.xlarge and every total reads "at least".
    estimate, findings = cost_findings(load_stack_file(stack(tmp_path, "ca-west-1")))

    assert estimate.monthly.min < 100000
    found = rules(findings)
    assert found["unpriced-compute"].severity == "failure" and found["unpriced-compute"].source == "budget"
    assert "big/instances (g5.xlarge)" in found["unpriced-compute"].message
    assert "gpu-cloud:budget.acceptUnpricedCompute: true" in found["unpriced-compute"].message
    assert "budget-exceeded-at-minimum" not in found


def test_a_stack_that_accepts_unpriced_compute_gets_a_warning_only(tmp_path):
    path = stack(tmp_path, "ca-west-1", budget="{monthlyUsd: 100000, acceptUnpricedCompute: true}")

    _estimate, findings = cost_findings(load_stack_file(path))

    assert [f.severity for f in findings if f.source == "budget"] == ["warning"]
    assert rules(findings)["unpriced-compute-accepted"].message.startswith("GPU compute is not priced (big/instances")


def test_priced_compute_raises_no_unpriced_compute_finding(tmp_path):
    _estimate, findings = cost_findings(load_stack_file(stack(tmp_path, "us-east-1")))

    assert not {"unpriced-compute", "unpriced-compute-accepted"} & set(rules(findings))


def test_accept_unpriced_compute_takes_a_boolean_only(tmp_path):
    path = stack(tmp_path, "ca-west-1", budget="{monthlyUsd: 100, acceptUnpricedCompute: 'yes'}")

    with pytest.raises(ConfigError) as error:
        load_stack_file(path)

    message = str(error.value)
    assert "Pulumi.faraway.yaml" in message and "budget.acceptUnpricedCompute" in message


def test_the_plan_summary_says_compute_is_unpriced_and_fails():
    finding = PlanFinding(source="budget", severity="failure", rule="unpriced-compute",
                          message="GPU compute is not priced, so the budget check cannot pass: big/instances (g5.xlarge)")
    plan = Plan(project="gpu-cloud", stack="faraway", region="ca-west-1", resources=[], outputs={}, findings=[finding])
    out = io.StringIO()

    render(plan, Console(file=out, width=100, color_system=None))

    summary = out.getvalue().split("Findings:")[0]
    assert "Cost: GPU compute is not priced, so the budget check cannot pass: big/instances (g5.xlarge)" in summary
    assert plan.failed


@pytest.mark.parametrize("region", ["ca-central-1", "ap-south-1", "eu-north-1", "sa-east-1", "ap-east-1"])
def test_a_region_beyond_the_first_four_prices_the_whole_stack(tmp_path, region):
    # GPU, KMS, gp3 and network rows in the fourteen first regions and, where the source prices the
    # type, in those added 2026-11-27 (sa-east-1 and ap-east-1 price g5.xlarge and gp3).
    estimate, findings = cost_findings(load_stack_file(stack(tmp_path, region)))

    [group] = estimate.groups
    assert group.on_demand.desired + group.spot.desired > 0
    assert estimate.unpriced == []
    assert not {"unpriced-compute", "unpriced-compute-accepted", "partial-cost-estimate"} & set(rules(findings))
