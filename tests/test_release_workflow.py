"""The release workflow: a v* tag that matches pyproject's version builds, checks and publishes the
distributions through PyPI trusted publishing, with the OIDC permission on the publishing job only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from support import ROOT

WORKFLOW_PATH = ROOT / ".github" / "workflows" / "release.yml"


def load() -> dict:
    return yaml.safe_load(WORKFLOW_PATH.read_text())


def test_release_runs_on_version_tags_only():
    workflow = load()
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads a bare `on:` as True
    assert workflow["permissions"] == {"contents": "read"}


def test_only_the_publish_job_may_mint_an_oidc_token_and_it_runs_in_the_pypi_environment():
    jobs = load()["jobs"]
    assert "permissions" not in jobs["build"]
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert publish["needs"] == "build"
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert uses[-1] == "pypa/gh-action-pypi-publish@release/v1"
    assert not [step for step in publish["steps"] if "with" in step and {"password", "user"} & set(step["with"])]


def test_build_checks_the_distributions_with_twine_before_uploading_them():
    build_steps = load()["jobs"]["build"]["steps"]
    script = "\n".join(step.get("run", "") for step in build_steps)
    assert "python3 -m build" in script and "twine check --strict dist/*" in script
    assert build_steps[-1]["uses"].startswith("actions/upload-artifact@")


def run_tag_check(tag: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    step = next(step for step in load()["jobs"]["build"]["steps"] if step.get("name") == "The tag names the package's version")
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env={"TAG": tag, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=30)


def test_a_tag_that_is_not_the_packages_version_is_refused():
    version = __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run_tag_check(f"v{version}", ROOT).returncode == 0
    refused = run_tag_check("v9.9.9", ROOT)
    assert refused.returncode == 1 and f"expected v{version}" in refused.stdout
