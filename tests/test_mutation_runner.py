"""The mutation runner the README tells people to run (tests/mutation/run.py) keeps working: its
module table names real modules and test files, every mutant it would make is valid Python, and a
mutant it runs is reported killed by that module's tests."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

RUNNER = Path(__file__).parent / "mutation" / "run.py"
sys.path.insert(0, str(RUNNER.parent))
import run as mutation  # noqa: E402

TABLE = tomllib.loads(mutation.MODULES.read_text(encoding="utf-8"))["modules"]


@pytest.mark.parametrize("pattern", list(TABLE))
def test_each_entry_names_modules_and_test_files_that_exist(pattern):
    assert sorted(mutation.PACKAGE.glob(pattern)), f"{pattern} matches no module under infra/gpucloud"
    for test_file in TABLE[pattern]:
        assert (mutation.ROOT / test_file).is_file(), f"{pattern}: {test_file} does not exist"


def test_every_operator_makes_valid_python_that_differs_from_the_module():
    module = "pricing/estimate.py"
    source = (mutation.PACKAGE / module).read_text(encoding="utf-8")
    first_of_each = {}
    for mutant in mutation.mutants(module):
        first_of_each.setdefault(mutant.operator, mutant)
    assert len(first_of_each) >= 5, f"{module}: only {sorted(first_of_each)}"
    for mutant in first_of_each.values():
        code = mutant.code()
        assert code != source, f"{mutant} changed nothing"
        ast.parse(code)


def test_a_mutant_that_breaks_the_estimate_is_reported_killed():
    first_return = next(mutant for mutant in mutation.mutants("pricing/estimate.py")
                        if mutant.operator == "return/ReplaceReturnValueWithNone")
    outcome, _ = mutation.run_tests(["tests/pricing/test_pricing_estimate.py"], timeout=120, mutant=first_return)

    assert outcome == "killed"


def test_the_runner_takes_the_flags_the_readme_gives():
    shown = subprocess.run([sys.executable, str(RUNNER), "--help"], capture_output=True, text=True, check=True).stdout

    assert all(flag in shown for flag in ("--sample", "--seed", "--jobs", "--all"))
