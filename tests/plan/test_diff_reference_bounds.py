"""Which values of a plan `gpucloud plan --base` compares by reference: the bounds the example
stacks never reach. Each test kills a mutant of `plan/diff.py` they let live
(tests/mutation/README.md)."""

from __future__ import annotations

from gpucloud.plan.diff import references
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

ROLE = "aws:iam/role:Role"


def role(name: str, id: str) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{ROLE}::{name}", type=ROLE, name=name, custom=True, id=id,
                           inputs={}, outputs={})


def test_an_id_of_six_characters_is_a_reference_and_a_shorter_one_is_not():
    """A resource's id counts whole (an IAM role's id is its name) from six characters: shorter
    values ("true", "tcp", "gp3") are too common to stand for one resource."""
    table = references(Plan(project="p", stack="s", region="us-east-1", outputs={},
                            resources=[role("six", "ml-run"), role("five", "ml-ru")]))

    assert table.get("ml-run") == "${six.id}"
    assert "ml-ru" not in table
