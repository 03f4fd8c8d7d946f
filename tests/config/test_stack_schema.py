"""The stack file's JSON Schema: generated from the config models, shipped current, named by every
example stack's modeline, and it accepts every example while refusing a broken stack."""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import pytest
import yaml

from gpucloud.cli import main
from gpucloud.config.schema import SCHEMA_FILE_NAME, packaged_schema_text, render_schema
from support import ROOT

SCHEMA_PATH = ROOT / "infra" / "gpucloud" / "data" / SCHEMA_FILE_NAME
STACK_FILES = sorted((ROOT / "stacks").rglob("Pulumi.*.yaml"))
MODELINE = re.compile(r"# yaml-language-server: \$schema=(?P<path>\S+)")
"""The YAML language server's inline schema comment (redhat-developer/yaml-language-server README,
"Using inlined schema": a relative path is relative to the YAML file; read 2026-11-25)."""


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator, document) -> list[str]:
    return sorted(f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document))


def test_the_packaged_schema_is_generated_from_the_current_models():
    assert SCHEMA_PATH.read_text() == render_schema(), "stale: run `gpucloud schema --write` and commit the file"


def test_gpucloud_schema_prints_the_packaged_schema(capsys):
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert printed == packaged_schema_text() == SCHEMA_PATH.read_text()
    assert "gpu-cloud:groups" in json.loads(printed)["properties"]["config"]["properties"]


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda path: path.name)
def test_every_example_stack_names_the_schema_on_its_first_line(stack_file):
    first_line = stack_file.read_text().splitlines()[0]
    match = MODELINE.fullmatch(first_line)
    assert match, f"{stack_file}: first line {first_line!r} is not the yaml-language-server modeline"
    assert (stack_file.parent / match["path"]).resolve() == SCHEMA_PATH.resolve()


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda path: path.name)
def test_every_example_stack_is_valid_under_the_schema(validator, stack_file):
    assert errors(validator, yaml.safe_load(stack_file.read_text())) == []


@pytest.fixture
def example() -> dict:
    return yaml.safe_load((ROOT / "stacks" / "Pulumi.notebooks.yaml").read_text())


def test_schema_refuses_a_misspelt_key_in_the_projects_namespace(validator, example):
    example["config"]["gpu-cloud:costCentre"] = example["config"].pop("gpu-cloud:costCenter")
    found = errors(validator, example)
    assert any("'gpu-cloud:costCenter' is a required property" in line for line in found), found
    assert any("gpu-cloud:costCentre" in line and "not" in line for line in found), found


def test_schema_refuses_a_wrong_type_deep_in_a_group(validator, example):
    broken = copy.deepcopy(example)
    broken["config"]["gpu-cloud:groups"][0]["maxSize"] = "two"
    broken["config"]["gpu-cloud:groups"][0]["unknownKey"] = 1
    found = errors(validator, broken)
    assert any(line.startswith("config/gpu-cloud:groups/0/maxSize:") for line in found), found
    assert any("unknownKey" in line for line in found), found


def test_schema_leaves_other_namespaces_to_their_owners_but_wants_a_region(validator, example):
    example["config"]["aws:profile"] = "research"
    assert errors(validator, example) == []
    del example["config"]["aws:region"]
    assert errors(validator, example) == ["config: 'aws:region' is a required property"]


def test_keys_carry_their_docstrings_as_descriptions():
    schema = json.loads(SCHEMA_PATH.read_text())
    health = schema["$defs"]["HealthConfig"]["properties"]["maxReplacementsPerHour"]
    assert "breaker" in health["description"]
