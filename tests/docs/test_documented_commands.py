"""Every `gpucloud` command the README and the guides show is one the command line accepts: its
subcommand and every flag exist and take the values shown (argparse parses it; nothing runs)."""

from __future__ import annotations

import re
import shlex

import pytest

from gpucloud.cli import build_parser
from support import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]


def shown_commands(text: str) -> list[str]:
    """`.venv/bin/gpucloud …` lines of the page's shell blocks, continuation lines joined, comments cut."""
    commands = []
    for block in re.findall(r"```(?:bash|console|sh)\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith(".venv/bin/gpucloud "):
                commands.append(line.split(" #", 1)[0].strip())
    return commands


COMMANDS = [(page.relative_to(ROOT).as_posix(), command) for page in PAGES for command in shown_commands(page.read_text())]


def test_the_readme_shows_the_three_team_paths():
    readme = [command for page, command in COMMANDS if page == "README.md"]
    assert any(command.startswith(".venv/bin/gpucloud connect ") for command in readme)
    assert any(command.startswith(".venv/bin/gpucloud run ") and "--nodes 2" in command for command in readme)


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{page}:{index}" for index, (page, _) in enumerate(COMMANDS)])
def test_documented_command_parses(page, command):
    words = shlex.split(command)[1:]
    try:
        build_parser().parse_args(words)
    except SystemExit as exit:
        pytest.fail(f"{page}: `{command}` is refused by the parser (exit {exit.code})")
