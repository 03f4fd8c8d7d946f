"""The examples of the guide "Using the components in your own program" (docs/guides/components.md),
run exactly as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from support import ROOT

GUIDE = ROOT / "docs" / "guides" / "components.md"


def guide_python_block(marker: str) -> str:
    """The one Python block of the guide that holds `marker`."""
    blocks = [block for block in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S) if marker in block]
    assert len(blocks) == 1, f"{GUIDE.name}: {len(blocks)} python blocks hold {marker!r}"
    return blocks[0]


PROGRAM = guide_python_block("EncryptedVolumeArgs(")
ENGINE_TEST = guide_python_block("moto_account(")
HANDLERS = guide_python_block("@register_resource(")

QUEUE_LINES = '''
jobs = aws.sqs.Queue("jobs", tags=tags)
pulumi.export("jobsQueueUrl", jobs.url)
'''


@pytest.fixture
def team(tmp_path):
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "__main__.py").write_text(PROGRAM)
    (tmp_path / "team_engine.py").write_text(HANDLERS)
    return tmp_path


def gpucloud(*arguments: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "import sys; from gpucloud.cli import main; sys.exit(main())", *arguments]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300)


def gpucloud_here(monkeypatch, capsys, *arguments: str, cwd) -> subprocess.CompletedProcess:
    """The same command in this process, for runs that check no process-wide output (a --handlers
    run restores the engine's table: `handlers_restored`): a fresh interpreter's imports were half of each run."""
    from gpucloud.cli import main

    monkeypatch.chdir(cwd)
    code = main(list(arguments))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(arguments, code, out, err)


def test_the_readme_program_plans_with_no_policy_violation(team, monkeypatch, capsys):
    result = gpucloud_here(monkeypatch, capsys, "plan", "--program", "team/", "--width", "200", cwd=team)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Policies: " in result.stdout and " run, 0 violations" in result.stdout
    assert "gpu-cloud:index:EncryptedVolume" in result.stdout
    assert "error" not in result.stderr.lower()


def test_the_readme_engine_test_runs_as_written(team, monkeypatch):
    monkeypatch.chdir(team)

    exec(compile(ENGINE_TEST, str(GUIDE), "exec"), {})


def test_the_engine_guide_example_runs_as_written(team, monkeypatch):
    guide = ROOT / "docs" / "guides" / "engine.md"
    [example] = [block for block in re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
                 if "run_program_file(" in block]
    monkeypatch.chdir(team)

    exec(compile(example, str(guide), "exec"), {})


def test_a_program_with_a_type_the_engine_lacks_fails_naming_it(team):
    (team / "team" / "__main__.py").write_text(PROGRAM + QUEUE_LINES)

    result = gpucloud("plan", "--program", "team/", cwd=team)

    assert result.returncode == 2
    assert "aws:sqs/queue:Queue" in result.stderr
    assert "never retrieved" not in result.stderr and "Traceback" not in result.stderr


@pytest.fixture
def handlers_restored():
    """A --handlers file registers process-wide; the engine's table is left as it was found."""
    from gpucloud.testing.registry import RESOURCES

    resources = dict(RESOURCES)
    yield
    RESOURCES.clear()
    RESOURCES.update(resources)


def test_the_readme_handlers_file_lets_that_program_plan_validated(team, monkeypatch, capsys, handlers_restored):
    (team / "team" / "__main__.py").write_text(PROGRAM + QUEUE_LINES)

    result = gpucloud_here(monkeypatch, capsys, "plan", "--program", "team/", "--handlers", "team_engine.py", "--json", cwd=team)

    assert result.returncode == 0, result.stderr
    plan = __import__("json").loads(result.stdout)
    (queue,) = [step for step in plan["steps"] if step["newState"]["type"] == "aws:sqs/queue:Queue"]
    assert queue["newState"]["id"].startswith("https://") and "gpucloudNotValidated" not in queue["newState"]
    assert plan["policyViolations"] == []


def test_recording_unknown_types_plans_and_says_what_was_not_checked(team, monkeypatch, capsys):
    (team / "team" / "__main__.py").write_text(PROGRAM + QUEUE_LINES)

    result = gpucloud_here(monkeypatch, capsys, "plan", "--program", "team/", "--record-unknown-types", "--width", "200", cwd=team)

    assert result.returncode == 0, result.stderr
    assert "recorded without moto validation: aws:sqs/queue:Queue" in result.stdout


def test_program_only_flags_are_refused_for_a_stack(team, monkeypatch, capsys):
    result = gpucloud_here(monkeypatch, capsys, "plan", "--stack", "notebooks", "--record-unknown-types", "--handlers", "x.py", cwd=ROOT)

    assert result.returncode == 2
    assert "--handlers, --record-unknown-types go with --program" in result.stderr
