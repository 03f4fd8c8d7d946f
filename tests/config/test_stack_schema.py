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


ENVIRONMENT_LISTS = (
    ("properties", "config", "properties", "aws:region", "enum"),
    ("$defs", "Schedule", "properties", "timeZone", "enum"),
)
"""Lists the schema takes from the machine that writes it: the regions of the installed botocore's
endpoint data and the zones of the tz database. A new region or zone is a reason to write the
schema again, not a failure of an unrelated change."""


def without_environment_lists(schema: dict) -> dict:
    schema = copy.deepcopy(schema)
    for *path, key in ENVIRONMENT_LISTS:
        node = schema
        for step in path:
            node = node[step]
        node.pop(key)
    return schema


def test_the_packaged_schema_is_generated_from_the_current_models():
    packaged, current = json.loads(SCHEMA_PATH.read_text()), json.loads(render_schema())
    assert without_environment_lists(packaged) == without_environment_lists(current), (
        "stale: run `gpucloud schema --write` and commit the file")
    assert SCHEMA_PATH.read_text() == json.dumps(packaged, indent=2, sort_keys=True) + "\n"


def test_the_schema_names_the_regions_botocore_knows_and_the_zones_of_the_tz_database():
    from gpucloud.config.fields import iana_time_zones
    from gpucloud.config.regions import known_regions

    schema = json.loads(SCHEMA_PATH.read_text())
    regions = schema["properties"]["config"]["properties"]["aws:region"]["enum"]
    assert {"us-east-1", "eu-west-1", "us-gov-west-1", "cn-north-1"} <= set(regions) <= set(known_regions())
    assert "us-east-9" not in regions
    zones = schema["$defs"]["Schedule"]["properties"]["timeZone"]["enum"]
    assert {"UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"} <= set(zones)
    assert len(set(zones) & iana_time_zones()) > 0.95 * len(zones)
    assert "localtime" not in zones


def test_a_typo_inside_an_optional_section_is_reported_as_the_typo(validator, example):
    """`X | None` keys were `anyOf [X, null]`: the editor said the whole section "is not valid under
    any of the given schemas" instead of naming the misspelt key."""
    example["config"]["gpu-cloud:groups"][0]["endpoint"] = {"port": 8000, "allowedCidrz": ["10.0.0.0/8"]}
    example["config"]["gpu-cloud:groups"][0]["scaling"] = {"schedules": [{"name": "night", "recurrence": "0 20 * * *",
                                                                          "maxSize": 0, "timezone": "UTC"}]}
    assert errors(validator, example) == [
        "config/gpu-cloud:groups/0/endpoint: Additional properties are not allowed ('allowedCidrz' was unexpected)",
        "config/gpu-cloud:groups/0/scaling/schedules/0: Additional properties are not allowed ('timezone' was unexpected)",
    ]


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


def patterns_without_words(node, path="") -> list[str]:
    if isinstance(node, dict):
        found = [path] if "pattern" in node and "patternErrorMessage" not in node else []
        return found + [miss for key, value in node.items() for miss in patterns_without_words(value, f"{path}/{key}")]
    if isinstance(node, list):
        return [miss for index, value in enumerate(node) for miss in patterns_without_words(value, f"{path}/{index}")]
    return []


def test_every_pattern_says_in_words_what_it_wants():
    """The YAML language server shows `patternErrorMessage` where it would print the regular
    expression ("String does not match the pattern of ^(?:(?=[^ ])(?:[*?#\\-]|0*(?:59|58|..."),
    so each pattern the CLI's checks put in the schema carries the CLI's words."""
    schema = json.loads(SCHEMA_PATH.read_text())
    assert patterns_without_words(schema) == []
    recurrence = schema["$defs"]["Schedule"]["properties"]["recurrence"]
    assert recurrence["patternErrorMessage"].startswith("expected 5 cron fields")

