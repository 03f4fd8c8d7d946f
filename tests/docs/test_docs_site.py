"""The docs site: its generated reference pages match the code, and a strict build fails on a broken
link, a missing anchor or a page left out of the nav. That the site itself builds in strict mode is
test_rendered_site.py's, whose pages come from that one build."""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from support import ROOT

MKDOCS_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
"""Material for MkDocs prints an end-of-life banner on every build unless told not to."""


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mkdocs_build(config, site):
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=MKDOCS_ENV, timeout=120)


@pytest.fixture(scope="module")
def generator():
    return load_generator()


def test_the_generated_reference_pages_are_current(generator):
    for path, text in generator.generated_pages().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run .venv/bin/python docs/generate.py and commit it"
        )


def test_the_generated_pages_do_not_change_with_the_day_they_are_made_on(generator, monkeypatch):
    """A default computed when args are made (the Grafana token's month) is named, not evaluated:
    a page that printed today's date went stale, and failed CI, the day after it was generated."""
    import dataclasses
    import datetime

    from gpucloud.components import GrafanaWorkspaceArgs

    def utc_today() -> datetime.date:
        return datetime.date(2031, 1, 2)

    pages = generator.generated_pages()
    [today] = [field for field in dataclasses.fields(GrafanaWorkspaceArgs) if field.name == "today"]
    monkeypatch.setattr(today, "default_factory", utc_today)
    assert generator.generated_pages() == pages
    assert "utc_today()" in pages[ROOT / "docs" / "reference" / "components.md"]


def test_the_command_reference_lists_every_command_of_the_parser(generator):
    from gpucloud.cli import build_parser

    page = generator.command_reference()
    for name, _, subparser in generator._subcommands(build_parser()):
        assert f"## `gpucloud {name}`" in page
        for option in (option for action in subparser._actions for option in action.option_strings):
            if option not in ("-h", "--help"):
                assert f"`{option}" in page or f"{option} " in page, f"gpucloud {name} {option} is missing"


def test_the_config_reference_has_every_key_of_the_schema_with_its_default_and_bounds(generator):
    page = generator.config_reference()
    key = generator._config_key
    assert f"| {key('gpu-cloud:groups[].maxSize')} | integer | required | >= 1; <= 1000 |" in page
    assert f"| {key('gpu-cloud:groups[].spotPercent')} | integer | `100` | >= 0; <= 100 |" in page
    assert f"| {key('gpu-cloud:groups[].health.maxReplacementsPerHour')} | integer | `2` | >= 1; <= 100 | The breaker:" in page
    assert f"| {key('gpu-cloud:groups[].scaling.schedules[].recurrence')} |" in page


def undescribed_keys(generator, schema):
    """Each key of the stack file's schema whose row in the reference would have an empty description
    (neither the field's docstring nor the docstring of the model it holds)."""
    definitions = schema["$defs"]
    missing = []

    def walk(key, field):
        resolved, _ = generator._resolve(field, definitions)
        if not generator._description(field, resolved):
            missing.append(key)
        suffix = ""
        while resolved.get("type") == "array" and "items" in resolved:
            resolved, _ = generator._resolve(resolved["items"], definitions)
            suffix += "[]"
        for name, child in (resolved.get("properties") or {}).items():
            walk(f"{key}{suffix}.{name}", child)

    for key, field in schema["properties"]["config"]["properties"].items():
        walk(key, field)
    return missing


def test_every_key_of_the_stack_schema_has_a_description(generator):
    from gpucloud.config.schema import stack_file_schema

    schema = stack_file_schema()
    assert undescribed_keys(generator, schema) == [], "give each of these keys a docstring under its field"
    broken = copy.deepcopy(schema)
    broken["$defs"]["GroupConfig"]["properties"]["maxSize"].pop("description")
    assert undescribed_keys(generator, broken) == ["gpu-cloud:groups[].maxSize"]


def test_a_broken_anchor_fails_the_strict_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with (docs / "guides" / "cost.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the network](network.md#no-such-section).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text((ROOT / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {docs}"))

    result = mkdocs_build(config, tmp_path / "site")

    assert result.returncode != 0
    assert "no-such-section" in result.stderr
