"""The newcomer's path: the README's quick-start stack file, copied as it stands, plans clean;
the new-project guide must show the same file."""

from __future__ import annotations

import contextlib
import io
import json
import re

import jsonschema
import pytest
import yaml

from support import ROOT

QUICK_START = "## Quick start"


def quick_start_source():
    return ROOT / "README.md"


def first_stack_block(text: str, after: str) -> str:
    section = text[text.index(after):]
    match = re.search(r"```yaml\n(.*?)```", section, flags=re.S)
    assert match, f"no yaml block after {after!r}"
    return match.group(1)


@pytest.fixture(scope="module")
def stack_text():
    return first_stack_block(quick_start_source().read_text(), QUICK_START)


@pytest.fixture(scope="module")
def planned(stack_text, tmp_path_factory):
    """`gpucloud plan --config` on the file, saved where the quick start says (its name is the stack's)."""
    from gpucloud.cli import main

    name = re.search(r"stacks/(Pulumi\.[\w-]+\.yaml)", stack_text).group(1)
    stack_file = tmp_path_factory.mktemp("newcomer") / "stacks" / name
    stack_file.parent.mkdir()
    stack_file.write_text(stack_text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "--config", str(stack_file), "--json"])
    return code, out.getvalue(), err.getvalue()


def test_the_quick_start_stack_file_plans_clean(planned):
    code, out, err = planned

    assert code == 0, err
    plan = json.loads(out)
    assert plan["policyViolations"] == []
    assert not [finding for finding in plan["findings"] if finding["severity"] == "failure"]
    assert plan["inputCoverage"]["neither"] == 0
    assert plan["changeSummary"]["create"] > 50


def test_the_quick_start_stack_file_is_valid_under_the_packaged_schema(stack_text):
    schema = json.loads((ROOT / "infra" / "gpucloud" / "data" / "stack-config.schema.json").read_text())

    jsonschema.validate(yaml.safe_load(stack_text), schema)


def test_the_new_project_guide_shows_the_same_stack_file(stack_text):
    guide = (ROOT / "docs" / "guides" / "new-project.md").read_text()

    assert first_stack_block(guide, "## 1. Write the stack file") == stack_text
