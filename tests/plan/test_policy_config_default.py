"""A local `gpucloud plan --stack S` reads policies/config/S.json as CI does, and a property the
policy does not have is an error rather than a silently kept default."""

from __future__ import annotations

import json
import shutil

import pytest

import gpucloud.plan
from gpucloud.cli import main
from gpucloud.policy import RULES, PackConfig, PolicyConfigError
from support import STACKS


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with the notebooks stack, the plan itself replaced by a recorder of its policy config."""
    (tmp_path / "stacks").mkdir()
    shutil.copy(STACKS / "Pulumi.notebooks.yaml", tmp_path / "stacks")
    (tmp_path / "policies" / "config").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    seen = []

    def record(settings, policy_config, facts):
        seen.append(policy_config)
        raise SystemExit(0)

    monkeypatch.setattr(gpucloud.plan, "plan_stack", record)
    return tmp_path, seen


def run_plan(*arguments) -> None:
    with pytest.raises(SystemExit):
        main(["plan", *arguments])


def test_the_stacks_own_policy_config_is_read_without_the_flag(project, capsys):
    root, seen = project
    (root / "policies" / "config" / "notebooks.json").write_text(json.dumps({"asg-bounded-and-rebalanced": {"maxGroupSize": 3}}))
    run_plan("--stack", "notebooks")
    assert seen[0].policy_config("asg-bounded-and-rebalanced").max_group_size == 3
    assert "policy config: policies/config/notebooks.json" in capsys.readouterr().err


def test_the_flag_still_overrides_the_stacks_own_file(project):
    root, seen = project
    (root / "policies" / "config" / "notebooks.json").write_text(json.dumps({"asg-bounded-and-rebalanced": {"maxGroupSize": 3}}))
    (root / "other.json").write_text(json.dumps({"asg-bounded-and-rebalanced": {"maxGroupSize": 7}}))
    run_plan("--stack", "notebooks", "--policy-config", "other.json")
    assert seen[0].policy_config("asg-bounded-and-rebalanced").max_group_size == 7


def test_without_a_file_the_defaults_apply(project, capsys):
    _, seen = project
    run_plan("--config", "stacks/Pulumi.notebooks.yaml")
    assert seen[0] == PackConfig()
    assert "policy config" not in capsys.readouterr().err


def test_a_misspelt_property_is_an_error_naming_the_one_meant(project, capsys):
    root, seen = project
    (root / "policies" / "config" / "notebooks.json").write_text(json.dumps({"asg-bounded-and-rebalanced": {"maxGroupSiz": 3}}))
    assert main(["plan", "--stack", "notebooks"]) == 2
    assert seen == []
    assert ("error: policy config policies/config/notebooks.json: 'asg-bounded-and-rebalanced': 'maxGroupSiz' is not a "
            "property of this policy (did you mean 'maxGroupSize'?)") in capsys.readouterr().err


def test_a_property_on_a_policy_without_properties_is_refused():
    names = [rule.name for rule in RULES]
    properties_of = {rule.name: list(rule.config_schema or {}) for rule in RULES}
    plain = next(rule.name for rule in RULES if not rule.config_schema)
    with pytest.raises(PolicyConfigError, match="it takes no properties"):
        PackConfig.from_document({plain: {"enforcementLevel": "advisory", "limit": 1}}, names, properties_of)
    assert PackConfig.from_document({plain: {"enforcementLevel": "advisory"}}, names, properties_of).levels == {
        plain: "advisory"}
