"""The mutation runner the README tells people to run (tests/mutation/run.py) keeps working: its
module table names real modules and test files, every mutant it would make is valid Python, and
run as documented it reports a mutant killed by that module's tests."""

from __future__ import annotations

import argparse
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


def test_a_run_mutates_the_package_snapshot_it_took_not_the_working_tree(tmp_path):
    """Others edit the working tree during a long run: each module's mutants are listed from and
    applied to the snapshot its run took; a mutant whose source moved on says so instead of
    writing None as the module."""
    module = tmp_path / "gpucloud" / "ops" / "tiny.py"
    module.parent.mkdir(parents=True)
    module.write_text("def due(now, deadline):\n    return now >= deadline\n", encoding="utf-8")
    package = module.parents[1]
    flipped = next(mutant for mutant in mutation.mutants("ops/tiny.py", package) if "GtE_Lt" in mutant.operator)

    assert "return now < deadline" in flipped.code(package)
    module.write_text("def due(now, deadline):\n    return False\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"ops/tiny.py has no .*GtE_Lt#0 \(the module changed"):
        flipped.code(package)


def test_the_runner_as_documented_kills_a_mutant_of_a_small_module():
    """The real runner end to end, in its own process: the module's tests pass without a mutant (a
    plugin or conftest that breaks under the runner's pytest options fails here, not in every
    module) and fail with one, and the table says so."""
    module = "documents/keys.py"
    first_return = next(mutant for mutant in mutation.mutants(module)
                        if mutant.operator == "return/ReplaceReturnValueWithNone")
    ran = subprocess.run([sys.executable, str(RUNNER), "--jobs", "1", "--mutant", first_return.id, module],
                         capture_output=True, text=True, timeout=120)

    assert ran.returncode == 0, ran.stderr
    row = next(line.split() for line in ran.stdout.splitlines() if line.startswith(module))
    assert row[2:] == ["1", "1", "0", "0", "0", "100%"], ran.stdout


def test_a_mutant_runs_only_the_tests_that_ran_its_line_and_one_on_a_line_no_test_runs_runs_none(
        tmp_path, monkeypatch):
    """The baseline runs under coverage, per test: a mutant of `due` runs the three tests that call it
    (and dies), a mutant of `unused` survives as uncovered without starting pytest; with
    --every-test each mutant runs the whole file, and those of `unused` survive it."""
    module = tmp_path / "src" / "gpucloud" / "ops" / "tiny.py"
    module.parent.mkdir(parents=True)
    for package in (module.parent, module.parents[1]):
        (package / "__init__.py").write_text("", encoding="utf-8")
    module.write_text("def due(now, deadline):\n    return now >= deadline\n\n\n"
                      "def unused(count):\n    return count + 1\n", encoding="utf-8")
    tests = tmp_path / "tests" / "test_tiny.py"
    tests.parent.mkdir()
    tests.write_text("from gpucloud.ops.tiny import due\n\n\n"
                     "def test_late():\n    assert due(2, 1)\n\n\n"
                     "def test_early():\n    assert not due(0, 1)\n\n\n"
                     "def test_on_time():\n    assert due(1, 1)\n\n\n"
                     "def test_nothing_of_the_module():\n    assert True\n", encoding="utf-8")
    runs = []
    real = mutation.run_tests

    def recorded(chosen, timeout, mutant=None, package=mutation.PACKAGE):
        if mutant is not None:
            runs.append((mutant.line, [test.rsplit("::", 1)[-1] for test in chosen]))
        return real(chosen, timeout, mutant, package)

    monkeypatch.setattr(mutation, "run_tests", recorded)
    args = argparse.Namespace(every_test=False, mutant=[], all=True, sample=0, seed=1, jobs=1, resumed={})
    row, lived = mutation.run_module("ops/tiny.py", [str(tests)], module.parents[1], args)

    _, mutants, sampled, killed, survived, uncovered, timeout, _ = row
    assert (survived, timeout) == (0, 0), lived
    assert killed == len([run for run in runs if run[0] == 2]) >= 3
    assert all(sorted(chosen) == ["test_early", "test_late", "test_on_time"] for line, chosen in runs), runs
    assert uncovered == len([mutant for mutant, outcome, _ in lived if mutant.line == 6 and outcome == "uncovered"]) >= 2
    assert killed + uncovered == sampled == mutants

    runs.clear()
    row, lived = mutation.run_module("ops/tiny.py", [str(tests)], module.parents[1],
                                     argparse.Namespace(**{**vars(args), "every_test": True}))

    assert row[3:7] == (killed, uncovered, 0, 0) and {outcome for _, outcome, _ in lived} == {"survived"}
    assert [chosen for _, chosen in runs] == [[str(tests)]] * mutants


def test_a_run_resumed_from_an_earlier_log_runs_only_the_mutants_that_log_lacks(tmp_path, monkeypatch, capsys):
    """A run stopped part-way (a time limit) goes on where it was: outcomes its output recorded are
    taken as they are, and only the other mutants start pytest."""
    module = tmp_path / "gpucloud" / "ops" / "tiny.py"
    module.parent.mkdir(parents=True)
    for package in (module.parent, module.parents[1]):
        (package / "__init__.py").write_text("", encoding="utf-8")
    module.write_text("def due(now, deadline):\n    return now >= deadline\n", encoding="utf-8")
    tests = tmp_path / "test_tiny.py"
    tests.write_text("from gpucloud.ops.tiny import due\n\n\ndef test_late():\n    assert due(2, 1)\n\n\n"
                     "def test_on_time():\n    assert due(1, 1)\n", encoding="utf-8")
    everything = mutation.mutants("ops/tiny.py", module.parents[1])
    first, rest = everything[0], everything[1:]
    log = tmp_path / "earlier.log"
    log.write_text(f"ops/tiny.py: baseline 1 s\n  ops/tiny.py:{first.line} {first.id}: survived (2 tests, 0.9 s)\n"
                   "  ops/tiny.py: 1 of 3 survived\n", encoding="utf-8")
    started = []
    monkeypatch.setattr(mutation, "run_tests", lambda chosen, timeout, mutant=None, package=None:
                        started.append(mutant.id) or ("killed", 0.1, ""))
    args = argparse.Namespace(every_test=True, mutant=[], all=True, sample=0, seed=1, jobs=1,
                              resumed=mutation.resumed([log]))

    row, lived = mutation.run_module("ops/tiny.py", [str(tests)], module.parents[1], args, baseline=1.0)

    assert sorted(started) == sorted(mutant.id for mutant in rest)
    assert row[3:5] == (len(rest), 1) and [mutant.id for mutant, _, _ in lived] == [first.id]
    assert f"ops/tiny.py:{first.line} {first.id}: survived (from the log resumed)" in capsys.readouterr().err


def test_modules_whose_every_mutant_a_resumed_log_records_skip_the_unmutated_run(tmp_path, monkeypatch):
    module = "documents/keys.py"
    log = tmp_path / "earlier.log"
    log.write_text("".join(f"  {module}:{mutant.line} {mutant.id}: killed (1 tests, 0.1 s)\n"
                           for mutant in mutation.mutants(module)), encoding="utf-8")
    monkeypatch.setattr(mutation, "measure_baseline", lambda *arguments: pytest.fail("the baseline ran"))
    monkeypatch.setattr(mutation, "run_tests", lambda *arguments, **options: pytest.fail("a mutant ran"))
    args = argparse.Namespace(every_test=False, mutant=[], all=True, sample=0, seed=1, jobs=1,
                              resumed=mutation.resumed([log]))

    [(name, row, lived)] = mutation.run_modules([module], ["tests/components/test_documents.py"], mutation.PACKAGE, args)

    assert (name, row[3:7], lived) == (module, (len(mutation.mutants(module)), 0, 0, 0), [])


def test_the_runner_takes_the_flags_the_readme_gives(monkeypatch, capsys):
    """Its own parser, in this process (the runner's process as documented is the end-to-end test above)."""
    monkeypatch.setattr(sys, "argv", [str(RUNNER), "--help"])
    with pytest.raises(SystemExit) as exit_:
        mutation.main()
    shown = capsys.readouterr().out

    assert exit_.value.code == 0
    assert all(flag in shown for flag in ("--sample", "--seed", "--jobs", "--all", "--mutant", "--every-test", "--resume"))
