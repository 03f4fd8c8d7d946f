"""cloud-init's schema check and shellcheck over a rendered user-data document, and the lookup of
the Debian tools the tests run.

cloud-init, shellcheck and promtool come from Debian (`apt-get install -y cloud-init shellcheck
prometheus`, done by .ci/setup). Without them a test skips, except under CI=true, where a missing
tool is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} is not installed (Debian: apt-get install -y cloud-init shellcheck prometheus)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI must have it")
    pytest.skip(message)


def shell_scripts(document: dict) -> dict[str, str]:
    return {
        entry["path"]: entry["content"]
        for entry in document["write_files"]
        if entry["content"].startswith(("#!/bin/sh", "#!/bin/bash"))
    }


def runcmd_script(document: dict, tmp_path: Path) -> str:
    """The script cloud-init itself makes of `runcmd`, through its own shellify()."""
    cloud_init = require_tool("cloud-init")
    interpreter = Path(cloud_init).read_text().splitlines()[0].removeprefix("#!").split()
    commands = tmp_path / "runcmd.yaml"
    commands.write_text(yaml.safe_dump(document["runcmd"]))
    program = "import sys, yaml; from cloudinit.util import shellify; print(shellify(yaml.safe_load(open(sys.argv[1]))), end='')"
    return subprocess.run(
        [*interpreter, "-c", program, str(commands)], capture_output=True, text=True, check=True
    ).stdout


def schema_problems(text: str, tmp_path: Path) -> str:
    """Empty when `cloud-init schema` accepts the document, else what it printed."""
    document = tmp_path / "user-data"
    document.write_text(text)
    result = subprocess.run([require_tool("cloud-init"), "schema", "-c", str(document)], capture_output=True, text=True)
    if result.returncode == 0 and "Valid cloud-config" in result.stdout:
        return ""
    return result.stdout + result.stderr


def shellcheck_problems(text: str, tmp_path: Path) -> tuple[list[str], str]:
    """The scripts a document carries (write_files and runcmd), and shellcheck's complaints."""
    document = yaml.safe_load(text)
    scripts = shell_scripts(document)
    scripts["runcmd"] = runcmd_script(document, tmp_path)
    files = []
    for number, (name, content) in enumerate(sorted(scripts.items())):
        files.append(tmp_path / f"{number}-{Path(name).name}")
        files[-1].write_text(content)
    result = subprocess.run(
        [require_tool("shellcheck"), "--severity=style", *map(str, files)], capture_output=True, text=True
    )
    return sorted(scripts), "" if result.returncode == 0 else result.stdout
