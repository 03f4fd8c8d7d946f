"""The README's deploy step shows the lines `gpucloud backend bootstrap` prints: the command as the
README writes it, run on moto in a repository holding the README's stack, prints exactly the
README's next lines (it once showed a bare `pulumi up` where the command prints the policy pack)."""

from __future__ import annotations

import re
import shlex

import pytest
from moto import mock_aws

from support import ROOT

NEXT_LINES = "It prints the lines to run next"


def readme_blocks_after(marker: str, count: int) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.*?)```", text[text.index(marker):], flags=re.S)[:count]


def shown_lines(block: str) -> list[str]:
    """A shell block's lines without their trailing comments."""
    return [line.split(" #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@pytest.fixture
def aws(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


def test_the_readme_shows_the_next_lines_bootstrap_prints(aws, monkeypatch, tmp_path, capsys):
    from gpucloud.cli import backend, main

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    [command_block] = re.findall(r"```bash\n(\.venv/bin/gpucloud backend bootstrap .*?)```", text, flags=re.S)
    [next_block] = readme_blocks_after(NEXT_LINES, 1)
    stack = re.search(r"pulumi stack init (\S+)", next_block).group(1)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    monkeypatch.setattr(backend, "STACKS_DIRECTORY", tmp_path)

    assert main(shlex.split(shown_lines(command_block)[0])[1:]) == 0

    printed = [line.strip() for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert shown_lines(next_block) == printed
