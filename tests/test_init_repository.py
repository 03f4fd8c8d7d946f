"""`gpucloud init`: a new repository that plans clean from its own folder, with a lint-clean CI workflow."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from actionlint_tool import actionlint  # noqa: F401  (the fixture)
from gpucloud.cli import main
from gpucloud.policy import RULES

GPUCLOUD = Path(sys.executable).parent / "gpucloud"
WRITTEN = [
    "Pulumi.yaml", "__main__.py", "requirements.txt", "stacks/Pulumi.vision-dev.yaml",
    "stacks/stack-config.schema.json", "policies/PulumiPolicy.yaml", "policies/__main__.py",
    "policies/requirements.txt", ".github/workflows/plan.yml",
]


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("init") / "team-a"
    assert main(["init", str(folder), "--stack", "vision-dev",
                 "--requirement", "gpucloud @ git+https://github.com/example/gpu-cloud@main"]) == 0
    return folder


def test_init_writes_the_project_stack_policy_pack_and_workflow(repository):
    assert sorted(str(path.relative_to(repository)) for path in repository.rglob("*") if path.is_file()) == sorted(WRITTEN)
    project = yaml.safe_load((repository / "Pulumi.yaml").read_text())
    assert project["name"] == "team-a"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    assert project["stackConfigDir"] == "stacks"
    assert "main" not in project  # the program is __main__.py beside Pulumi.yaml
    assert (repository / "__main__.py").read_text().split() == ["from", "gpucloud.program", "import", "main", "main()"]
    assert (repository / "stacks/Pulumi.vision-dev.yaml").read_text().startswith(
        "# yaml-language-server: $schema=stack-config.schema.json\n")
    assert "gpucloud[plan] @ git+https://github.com/example/gpu-cloud@main" in (repository / "requirements.txt").read_text()
    assert "gpucloud[policy] @ git+https://github.com/example/gpu-cloud@main" in (
        repository / "policies/requirements.txt").read_text().splitlines()


def test_the_new_repository_plans_its_stack_clean_from_its_own_folder(repository):
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    result = subprocess.run([str(GPUCLOUD), "plan", "--stack", "vision-dev"], cwd=repository, env=environment,
                            capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "0 violations" in result.stdout


def test_the_new_repository_workflow_passes_actionlint(repository, actionlint):
    workflow = repository / ".github/workflows/plan.yml"
    result = subprocess.run([actionlint, str(workflow)], cwd=repository, capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stdout + result.stderr
    assert ".venv/bin/gpucloud plan --stack \"$stack\"" in workflow.read_text()


def test_the_new_policy_pack_serves_every_rule(repository, monkeypatch):
    served: list[dict] = []
    monkeypatch.setattr("pulumi_policy.PolicyPack", lambda **kwargs: served.append(kwargs))

    runpy.run_path(str(repository / "policies/__main__.py"), run_name="__main__")

    assert [policy.name for policy in served[0]["policies"]] == [rule.name for rule in RULES]
    assert (repository / "policies/PulumiPolicy.yaml").read_text().count("virtualenv: venv") == 1


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.vision-dev.yaml").write_text("config: {}\n")

    assert main(["init", str(tmp_path), "--stack", "vision-dev"]) == 2

    assert "stacks/Pulumi.vision-dev.yaml already exist" in capsys.readouterr().err
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == [
        "stacks", "stacks/Pulumi.vision-dev.yaml"]
    assert (tmp_path / "stacks" / "Pulumi.vision-dev.yaml").read_text() == "config: {}\n"


def test_init_refuses_a_stack_name_the_project_key_would_refuse(tmp_path, capsys):
    assert main(["init", str(tmp_path / "x"), "--stack", "Vision_Dev"]) == 2
    assert "stack name 'Vision_Dev'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()

