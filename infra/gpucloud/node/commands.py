"""Runs external programs with a time limit and reports failure as data, never as an exception.

A wedged GPU driver shows up as a command that hangs or exits non-zero; the health check must turn
that into an "unhealthy" verdict, so every outcome (missing binary, timeout, exit status) is a value.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    """What one command did: its exit status and output, or why it produced none."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.not_found

    def describe_failure(self, timeout_s: float | None = None) -> str:
        """One line saying why the command failed, for an operator reading a health report."""
        program = self.argv[0] if self.argv else "command"
        if self.not_found:
            return f"{program} not found"
        if self.timed_out:
            limit = f" within {timeout_s:g} s" if timeout_s is not None else ""
            return f"{program} did not answer{limit}"
        detail = _first_line(self.stderr) or _first_line(self.stdout)
        suffix = f": {detail}" if detail else ""
        return f"{program} failed with exit status {self.returncode}{suffix}"


class CommandRunner(Protocol):
    """Anything that runs argv with a time limit; tests substitute recorded outputs."""

    def __call__(
        self,
        argv: Sequence[str],
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...


# A process stuck in the kernel (a hung driver ioctl) ignores SIGKILL until the call returns;
# after killing it we wait this long for its output, then abandon it rather than hang ourselves.
_REAP_GRACE_S = 2.0


def run_command(
    argv: Sequence[str],
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run argv without a shell, capturing text output. After timeout_s seconds its whole process
    group goes: the command runs in a session of its own, so a wrapper's children (a script that
    starts `aws s3 sync`, a hung nvidia-smi helper) die with it and cannot hold our pipes open."""
    argv = tuple(argv)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except FileNotFoundError:
        return CommandResult(argv, returncode=None, not_found=True)
    except PermissionError as error:
        return CommandResult(argv, returncode=None, stderr=str(error))
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            stdout, stderr = process.communicate(timeout=_REAP_GRACE_S)
        except subprocess.TimeoutExpired:
            stdout, stderr = "", ""
        return CommandResult(argv, returncode=None, stdout=stdout, stderr=stderr, timed_out=True)
    return CommandResult(argv, returncode=process.returncode, stdout=stdout, stderr=stderr)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
