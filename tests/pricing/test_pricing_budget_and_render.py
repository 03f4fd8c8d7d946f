import io

from rich.console import Console

from gpucloud.pricing import budget_findings, estimate_stack
from gpucloud.pricing.render import render_estimate


def _two_group_stack(stack_config):
    return stack_config(
        {"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 1, "desiredCapacity": 3, "maxSize": 4,
         "spotPercent": 0},
        {"name": "notebook", "instanceTypes": ["g4dn.xlarge"], "minSize": 0, "desiredCapacity": 1, "maxSize": 1,
         "spotPercent": 0, "persistentVolumeGiB": 100},
    )


def test_budget_between_min_and_desired_gives_one_warning_naming_groups_and_figures(stack_config):
    estimate = estimate_stack(_two_group_stack(stack_config), "us-east-1")
    budget = (estimate.monthly.min + estimate.monthly.desired) / 2

    findings = budget_findings(estimate, budget)

    assert [finding.severity for finding in findings] == ["warning"]
    message = findings[0].message
    assert f"${estimate.monthly.desired:,.2f}" in message and f"${budget:,.2f}" in message
    assert "train" in message and "notebook" in message


def test_budget_below_the_minimum_fails_naming_the_groups_that_cost_at_minimum(stack_config):
    estimate = estimate_stack(_two_group_stack(stack_config), "us-east-1")

    findings = budget_findings(estimate, estimate.monthly.min - 0.01)

    assert [finding.severity for finding in findings] == ["failure"]
    message = findings[0].message
    assert f"${estimate.monthly.min:,.2f}" in message
    assert "train" in message
    assert "notebook $8.00" in message  # at minimum only its persistent volume: 100 GB x $0.08


def test_budget_above_the_desired_estimate_gives_no_finding(stack_config):
    estimate = estimate_stack(_two_group_stack(stack_config), "us-east-1")

    assert budget_findings(estimate, estimate.monthly.desired) == []


def test_renderer_prints_lines_totals_in_cents_and_says_usd(stack_config):
    estimate = estimate_stack(_two_group_stack(stack_config), "us-east-1")
    output = io.StringIO()

    render_estimate(estimate, Console(file=output, width=160, color_system=None))

    text = output.getvalue()
    assert "USD" in text
    for header in ("Resource", "Quantity", "Unit", "Monthly cost"):
        assert header in text
    assert "train/instances (on-demand)" in text and "notebook/persistent volume" in text
    assert f"${estimate.monthly.desired:,.2f}" in text and f"${estimate.monthly.max:,.2f}" in text
    assert "first listed type" in text


def test_a_budget_failure_without_running_groups_names_the_largest_lines_not_storage():
    """No instance runs at minimum, the NAT gateway is most of the cost: the message says so."""
    from gpucloud.config import parse_stack_config
    from support import minimal_config

    settings = parse_stack_config(minimal_config(), stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    estimate = estimate_stack(settings.config, settings.region)
    nat = next(line for line in estimate.lines if "NAT gateway" in line.resource)
    assert nat.monthly.min == max(line.monthly.min for line in estimate.lines) > 0

    [finding] = budget_findings(estimate, 1.0)

    assert finding.severity == "failure"
    assert f"(no group runs instances; largest lines: {nat.resource} ${nat.monthly.min:,.2f}, " in finding.message
    assert "storage and the KMS key" not in finding.message
