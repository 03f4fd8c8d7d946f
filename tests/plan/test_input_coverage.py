"""Coverage you can see: every input property an example stack sets either reached AWS through a
call the engine checks, or is checked by a cited provider rule. The plan counts the rest, and each
example stack is held to an exact count (the goal, and today's count, is zero)."""

from __future__ import annotations

import pytest

from gpucloud.plan.view import coverage_summary
from support import EXAMPLE_STACKS, ROOT, STACKS, plan_once

WITH_FACTS = {
    "frontier-train": ROOT / "stacks" / "capacity-block-example",
    "team-vpc": ROOT / "stacks" / "own-vpc-example",
}

UNCHECKED: dict[str, list[tuple[str, str]]] = {stack: [] for stack in [*EXAMPLE_STACKS, *WITH_FACTS]}
"""(resource type, property) each example stack may leave unchecked, each with the reason it is
acceptable. None today: every property reaches a checked call or a cited provider rule."""


@pytest.fixture(scope="module", params=[*EXAMPLE_STACKS, *WITH_FACTS])
def example_plan(request):
    """Each example stack planned once, as `gpucloud plan` plans it (with its account facts)."""
    folder = WITH_FACTS.get(request.param)
    if folder is None:
        return request.param, plan_once(STACKS / f"Pulumi.{request.param}.yaml")
    return request.param, plan_once(folder / f"Pulumi.{request.param}.yaml", folder / "facts" / f"{request.param}.yaml")


def test_every_input_an_example_stack_sets_is_sent_to_aws_or_checked_by_a_cited_rule(example_plan):
    stack, plan = example_plan

    unchecked = sorted((entry["type"], entry["property"]) for entry in plan.unchecked_inputs)

    assert unchecked == sorted(UNCHECKED[stack])
    assert coverage_summary(plan).strip().startswith(f"{len(unchecked)} input propert")


def test_the_example_stacks_break_no_provider_rule(example_plan):
    _, plan = example_plan

    assert [finding.message for finding in plan.findings if finding.source == "provider"] == []


def test_the_json_plan_lists_the_coverage(example_plan):
    _, plan = example_plan

    coverage = plan.to_preview_json()["inputCoverage"]

    assert coverage["neither"] == len(coverage["unchecked"]) == len(plan.unchecked_inputs)
    assert coverage["properties"] > 100


def test_a_type_the_engine_lacks_counts_every_input_it_sets():
    import pulumi_aws as aws

    from gpucloud.plan import plan_program

    plan = plan_program(lambda: aws.sqs.Queue("jobs", name="jobs", delay_seconds=5), record_unknown_types=True)

    assert sorted(entry["property"] for entry in plan.unchecked_inputs) == ["delaySeconds", "name"]
    assert coverage_summary(plan) == "    2 input properties neither sent to AWS nor checked by a provider rule (--json lists them)"


def test_a_handler_reads_what_it_passes_on_through_copies_joins_and_nested_lists():
    import json

    from gpucloud.testing.input_coverage import TrackedInputs, unread

    inputs = TrackedInputs({
        "name": "g", "subnets": ["a", "b"], "tags": {"Project": "p"}, "ignored": True,
        "policy": {"rules": [{"id": 1, "skipped": 2}]}, "copied": {"x": 1},
    })
    ",".join(inputs["subnets"])
    json.dumps({**inputs["copied"]})
    [rule["id"] for rule in inputs["policy"]["rules"]]
    dict(inputs.get("tags"))
    inputs.get("name")

    assert unread(inputs) == ["ignored", "policy.rules[].skipped"]


def test_a_budgets_tags_reach_create_budget_where_aws_checks_them():
    """Found by the coverage count: the engine dropped a budget's tags, which the provider sends
    with CreateBudget (ResourceTags), so nothing checked them."""
    import pulumi_aws as aws

    from gpucloud.plan import plan_program
    from gpucloud.plan.program_source import ProgramFailed

    def budget_with_a_long_tag() -> None:
        aws.budgets.Budget("monthly", budget_type="COST", limit_amount="100", limit_unit="USD", time_unit="MONTHLY",
                           tags={"Project": "p" * 300})

    with pytest.raises(ProgramFailed, match=r"CreateBudget .*ResourceTags\[0\]\.Value"):
        plan_program(budget_with_a_long_tag)
