"""The base side of `gpucloud plan --base REF`: the stack file as it is in a git ref (or another
file), planned on the same engine as the change, then compared (`plan.diff`)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from gpucloud.config import ConfigError, StackSettings, load_stack_file
from gpucloud.plan.diff import PlanDiff, diff_plans
from gpucloud.plan.model import PROJECT, Plan
from gpucloud.plan.preview import plan_stack
from gpucloud.policy import PackConfig, PolicyConfig
from gpucloud.testing.facts import AccountFacts


class BaseNotFound(Exception):
    """The git ref or the repository cannot be read (not the file missing at the ref: that is a new stack)."""


def stack_file_at(ref: str, stack_file: Path) -> str | None:
    """The text of `stack_file` as committed in `ref` (`git show REF:path`), or None when the ref
    has no such file (the change adds the stack)."""
    where = stack_file.resolve().parent
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=where, capture_output=True,
                             text=True, check=True).stdout.strip()
        subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=top,
                       capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = (getattr(error, "stderr", "") or "").strip() or str(error) or "unknown ref"
        raise BaseNotFound(f"--base {ref}: not a commit of the git repository holding {stack_file} ({detail})") from None
    relative = stack_file.resolve().relative_to(Path(top).resolve()).as_posix()
    shown = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=top, capture_output=True, text=True, check=False)
    return shown.stdout if shown.returncode == 0 else None


def base_settings(stack_file: Path, text: str, label: str, region: str | None) -> StackSettings:
    """Parse the base's text under the stack file's own name (the stack name comes from it); a
    config error names the base (`REF:path`), not the temporary copy."""
    with tempfile.TemporaryDirectory(prefix="gpucloud-base-") as folder:
        copy = Path(folder) / stack_file.name
        copy.write_text(text, encoding="utf-8")
        try:
            return load_stack_file(copy, region=region)
        except ConfigError as error:
            raise ConfigError(error.source.replace(str(copy), label), error.problems) from None


def empty_plan(settings: StackSettings) -> Plan:
    """The base of a stack the change adds: nothing exists yet."""
    return Plan(project=PROJECT, stack=settings.stack, region=settings.region, resources=[], outputs={})


def plan_change(
    settings: StackSettings,
    base: StackSettings | None,
    policy_config: PolicyConfig | PackConfig | None = None,
    facts: AccountFacts | None = None,
    *,
    base_label: str = "base",
    current_label: str = "working tree",
) -> PlanDiff:
    """Plan the base and the change on fresh accounts seeded with the same facts, and compare them."""
    before = plan_stack(base, policy_config, facts) if base is not None else empty_plan(settings)
    after = plan_stack(settings, policy_config, facts)
    return diff_plans(before, after, intended=tuple(settings.config.intended_replacements),
                      base_label=base_label, current_label=current_label)
