"""Sampled mutation testing: do the tests of a module fail when its rules break?

For each module of modules.toml, cosmic-ray enumerates its mutants (the operators in OPERATORS),
a seeded sample of them is drawn, and each sampled mutant runs against that module's own test
files. The mutated module lives in a temporary copy of the package that shadows the installed
one through PYTHONPATH, so the working tree is never written. Each module's run works on one
snapshot of the package, taken before its baseline, so an edit to the working tree meanwhile
changes none of its mutants. The baseline runs under coverage, per test (coverage_map.py), and a
mutant runs only the tests that ran its lines; one on a line no test runs survives unrun
("uncovered"). `--every-test` runs each mutant against every test file instead. See README.md.

    python tests/mutation/run.py [--sample 40 | --all | --mutant ID ...] [--seed 1] [--jobs 2] [--every-test] [module ...]
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import parso
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code
from cosmic_ray.operators.operator import Operator
from cosmic_ray.plugins import get_operator
from coverage_map import TestMap, combine, measuring

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "infra" / "gpucloud"
MODULES = Path(__file__).with_name("modules.toml")
PYTEST_ARGS = (
    "-x", "-q", "-o", "addopts=", "-p", "no:xdist", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
)


class ReplaceInWithNotIn(Operator):
    """``in`` <-> ``not in``: membership tests decide many verdicts; cosmic-ray has no operator for them."""

    @staticmethod
    def _points(node):
        return [i for i, op in enumerate(node.children) if i % 2 and op.get_code().strip() in ("in", "not in")]

    def mutation_positions(self, node):
        if node.type == "comparison":
            for i in self._points(node):
                yield node.children[i].start_pos, node.children[i].end_pos

    def mutate(self, node, index):
        i = self._points(node)[index]
        node.children[i] = parso.parse(" in" if "not" in node.children[i].get_code() else " not in")
        return node

    @classmethod
    def examples(cls):
        return ()


class ReplaceReturnValueWithNone(Operator):
    """``return x`` -> ``return None``, which cosmic-ray does not provide."""

    def mutation_positions(self, node):
        if node.type == "return_stmt" and node.children[1].get_code().strip() != "None":
            yield node.start_pos, node.end_pos

    def mutate(self, node, index):
        node.children[1] = parso.parse(" None")
        return node

    @classmethod
    def examples(cls):
        return ()


def _core(*names: str) -> list[tuple[str, Operator]]:
    return [(f"core/{name}", get_operator(f"core/{name}")()) for name in names]


# Flipped comparisons (negation and boundary), and/or, negated conditions, constants +-1, returns
# replaced by None, the natural arithmetic swap of each operator, and loops, handlers and
# decorators removed. cosmic-ray's other replacements (== to <, + to <<, ...) multiply the
# mutants of one line tenfold without testing anything new, so they are left out.
OPERATORS: list[tuple[str, Operator]] = [
    *_core(*(f"ReplaceComparisonOperator_{a}_{b}" for a, b in (
        ("Eq", "NotEq"), ("NotEq", "Eq"), ("Is", "IsNot"), ("IsNot", "Is"),
        ("Lt", "GtE"), ("Lt", "LtE"), ("LtE", "Gt"), ("LtE", "Lt"),
        ("Gt", "LtE"), ("Gt", "GtE"), ("GtE", "Lt"), ("GtE", "Gt"),
    ))),
    ("in/ReplaceInWithNotIn", ReplaceInWithNotIn()),
    *_core("ReplaceAndWithOr", "ReplaceOrWithAnd", "AddNot", "ReplaceUnaryOperator_Delete_Not",
           "ReplaceTrueWithFalse", "ReplaceFalseWithTrue", "NumberReplacer", "ReplaceUnaryOperator_USub_UAdd"),
    ("return/ReplaceReturnValueWithNone", ReplaceReturnValueWithNone()),
    *_core(*(f"ReplaceBinaryOperator_{a}_{b}" for a, b in (
        ("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("FloorDiv", "Div"),
        ("Mod", "Div"), ("Pow", "Mul"), ("BitOr", "BitAnd"), ("BitAnd", "BitOr"),
    ))),
    *_core("ZeroIterationForLoop", "ReplaceContinueWithBreak", "ReplaceBreakWithContinue",
           "ExceptionReplacer", "RemoveDecorator"),
]


@dataclass(frozen=True)
class Mutant:
    module: str
    operator: str
    occurrence: int
    line: int

    @property
    def id(self) -> str:
        """How `--mutant` names it: the operator and which of its points in the module."""
        return f"{self.operator}#{self.occurrence}"

    def code(self, package: Path = PACKAGE) -> str:
        source = (package / self.module).read_text(encoding="utf-8")
        mutated = mutate_code(source, dict(OPERATORS)[self.operator], self.occurrence)
        if mutated is None:
            raise ValueError(f"{self.module} has no {self.id} (the module changed since its mutants were listed)")
        return mutated

    def change(self, package: Path = PACKAGE) -> tuple[str, str]:
        """The mutated line(s), before and after."""
        old = (package / self.module).read_text(encoding="utf-8").splitlines()
        new = self.code(package).splitlines()
        _, i1, i2, j1, j2 = self._opcode(old, new)
        return _shown(old[i1:i2]), _shown(new[j1:j2])

    def lines(self, package: Path = PACKAGE) -> set[int]:
        """The module's lines (1-based) that the mutant changes."""
        old = (package / self.module).read_text(encoding="utf-8").splitlines()
        _, i1, i2, _, _ = self._opcode(old, self.code(package).splitlines())
        return set(range(i1 + 1, max(i2, i1 + 1) + 1))

    @staticmethod
    def _opcode(old: list[str], new: list[str]) -> tuple:
        return next(op for op in difflib.SequenceMatcher(None, old, new).get_opcodes() if op[0] != "equal")


def _shown(lines: list[str], width: int = 100) -> str:
    joined = " / ".join(line.strip() for line in lines if line.strip())
    return joined if len(joined) <= width else joined[: width - 3] + "..."


def _in_annotation(node) -> bool:
    """Annotations are never evaluated (``from __future__ import annotations``): mutants there are equivalent."""
    while node.parent is not None:
        siblings = node.parent.children
        position = siblings.index(node)
        previous = siblings[position - 1].get_code().strip() if position else ""
        if (node.parent.type, previous) in {("tfpdef", ":"), ("annassign", ":"), ("funcdef", "->")}:
            return True
        node = node.parent
    return False


def mutants(module: str, package: Path = PACKAGE) -> list[Mutant]:
    """Every mutant of one module, in a stable order (operator, then position)."""
    nodes = list(ast_nodes(get_ast((package / module).read_text(encoding="utf-8"))))
    found = []
    for name, operator in OPERATORS:
        points = [(node, start) for node in nodes for start, _end in operator.mutation_positions(node)]
        found += [Mutant(module, name, occurrence, start[0])
                  for occurrence, (node, start) in enumerate(points) if not _in_annotation(node)]
    return found


def run_tests(tests: list[str], timeout: float, mutant: Mutant | None = None,
              package: Path = PACKAGE) -> tuple[str, float, str]:
    """'killed', 'survived', 'timeout' or 'not run' (pytest found no such test), the seconds the tests took,
    and the end of pytest's output.

    The tests run on a copy of `package` made of hard links, the mutated module written anew."""
    with tempfile.TemporaryDirectory(prefix="gpucloud-mutant-") as copy:
        shutil.copytree(package, Path(copy) / "gpucloud", ignore=shutil.ignore_patterns("__pycache__"),
                        copy_function=_link_or_copy)
        if mutant is not None:
            target = Path(copy) / "gpucloud" / mutant.module
            code = mutant.code(package)
            target.unlink()
            target.write_text(code, encoding="utf-8")
        return _pytest(tests, timeout, [copy], {})


def measure_baseline(modules: list[str], tests: list[str], timeout: float, package: Path,
                     workdir: Path) -> tuple[str, float, str, dict[str, TestMap]]:
    """The tests unmutated on `package` itself, under coverage: the outcome and, per module, which test ran each line."""
    extra = measuring(workdir, [package / module for module in modules])
    outcome, seconds, tail = _pytest(tests, timeout, [str(package.parent)], extra, plugins=("mutation_contexts",))
    if outcome != "survived":
        return outcome, seconds, tail, {}
    combine(workdir)
    return outcome, seconds, tail, {module: TestMap.read(workdir, package / module) for module in modules}


def _pytest(tests: list[str], timeout: float, paths: list[str], extra: dict[str, str],
            plugins: tuple[str, ...] = ()) -> tuple[str, float, str]:
    pythonpath = [*paths, extra.pop("PYTHONPATH", ""), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, **extra, "PYTHONPATH": os.pathsep.join(filter(None, pythonpath)),
           "PYTHONDONTWRITEBYTECODE": "1"}
    loaded = [arg for plugin in plugins for arg in ("-p", plugin)]
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, *loaded, *tests], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started, ""
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
    outcome = {0: "survived", 4: "not run", 5: "not run"}.get(result.returncode, "killed")
    return outcome, time.monotonic() - started, tail


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def chosen(module: str, ids: list[str], package: Path = PACKAGE) -> list[Mutant]:
    """The mutants of one module that `--mutant` names, in the order given."""
    by_id = {mutant.id: mutant for mutant in mutants(module, package)}
    unknown = [name for name in ids if name not in by_id]
    if unknown:
        raise SystemExit(f"{module} has no mutant {', '.join(unknown)} (ids are printed with each survivor)")
    return [by_id[name] for name in ids]


def run_modules(modules: list[str], tests: list[str], package: Path, args) -> list[tuple[str, tuple | None, list]]:
    """Modules that share their test files, on one snapshot and one baseline: per module its table
    row and its survivors with their changed lines (row None: the tests fail unmutated). Modules
    whose every drawn mutant a resumed log records need no unmutated run."""
    if args.resumed and all((module, mutant.id) in args.resumed
                            for module in modules for mutant in drawn(module, package, args)):
        print(f"{', '.join(modules)}: every mutant drawn is in the logs resumed", file=sys.stderr, flush=True)
        return [(module, *run_module(module, tests, package, args, 0.0)) for module in modules]
    with tempfile.TemporaryDirectory(prefix="gpucloud-coverage-") as workdir:
        if args.every_test:
            outcome, baseline, output = run_tests(tests, timeout=900, package=package)
            maps = {}
        else:
            outcome, baseline, output, maps = measure_baseline(modules, tests, 900, package, Path(workdir))
    if outcome != "survived":
        print(f"{', '.join(modules)}: the tests fail without any mutant ({' '.join(tests)}):\n{output}", file=sys.stderr)
        return [(module, None, []) for module in modules]
    print(f"{', '.join(modules)}: baseline {baseline:.0f} s", file=sys.stderr, flush=True)
    return [(module, *run_module(module, tests, package, args, baseline, maps.get(module))) for module in modules]


def drawn(module: str, package: Path, args, everything: list[Mutant] | None = None) -> list[Mutant]:
    """The mutants of `module` this run tries: those `--mutant` names, every one (`--all`), or the seed's sample."""
    if args.mutant:
        return chosen(module, args.mutant, package)
    everything = mutants(module, package) if everything is None else everything
    size = len(everything) if args.all else min(args.sample, len(everything))
    return sorted(random.Random(f"{args.seed}:{module}").sample(everything, size),
                  key=lambda mutant: (mutant.line, mutant.operator))


def run_module(module: str, tests: list[str], package: Path, args, baseline: float | None = None,
               found: TestMap | None = None) -> tuple[tuple | None, list]:
    """One module's table row and its survivors with their changed lines (None: its tests fail unmutated)."""
    if baseline is None:
        return run_modules([module], tests, package, args)[0][1:]
    everything = mutants(module, package)
    sample = drawn(module, package, args, everything)
    timeout = 4 * baseline + 30
    print(f"{module}: {len(sample)} mutants", file=sys.stderr, flush=True)

    def one(mutant: Mutant) -> str:
        chosen_tests = tests if found is None else found.tests_for(mutant.lines(package))
        if (module, mutant.id) in args.resumed:
            outcome = args.resumed[module, mutant.id]
            print(f"  {module}:{mutant.line} {mutant.id}: {outcome} (from the log resumed)", file=sys.stderr, flush=True)
            return outcome
        if chosen_tests == []:
            outcome, seconds = "uncovered", 0.0
        else:
            limit = timeout if found is None or not chosen_tests else min(timeout, found.timeout(chosen_tests))
            outcome, seconds, output = run_tests(chosen_tests or tests, limit, mutant, package)
            if outcome == "not run" and chosen_tests:
                print(f"  {module}: pytest found no tests in {chosen_tests}; every test instead", file=sys.stderr)
                chosen_tests = None
                outcome, seconds, output = run_tests(tests, timeout, mutant, package)
            if outcome == "not run":
                raise RuntimeError(f"{module} {mutant.id}: pytest ran no test of {' '.join(tests)}:\n{output}")
        shown = "every test" if chosen_tests in (None, tests) else f"{len(chosen_tests)} tests"
        print(f"  {module}:{mutant.line} {mutant.id}: {outcome} ({shown}, {seconds:.1f} s)", file=sys.stderr, flush=True)
        return outcome

    with ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(one, sample))
    counts = {kind: outcomes.count(kind) for kind in ("killed", "survived", "uncovered", "timeout")}
    score = (counts["killed"] + counts["timeout"]) / len(sample) if sample else 1.0
    print(f"{module}: {counts['survived'] + counts['uncovered']} of {len(sample)} survived", file=sys.stderr, flush=True)
    lived = [(mutant, outcome, mutant.change(package)) for mutant, outcome in zip(sample, outcomes)
             if outcome in ("survived", "uncovered")]
    return (module, len(everything), len(sample), *counts.values(), f"{score:.0%}"), lived


RECORDED = re.compile(r"^\s+(\S+\.py):\d+ (\S+): (killed|survived|uncovered|timeout) \(")


def resumed(logs: list[Path]) -> dict[tuple[str, str], str]:
    """Outcomes by (module, mutant id) that earlier runs printed: a run stopped part-way goes on where it was."""
    found = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            if match := RECORDED.match(line):
                found[match[1], match[2]] = match[3]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="paths under infra/gpucloud/ (default: all of modules.toml)")
    parser.add_argument("--sample", type=int, default=40, help="mutants per module (all when fewer)")
    parser.add_argument("--all", action="store_true", help="every mutant of each module, not a sample")
    parser.add_argument("--mutant", action="append", default=[], metavar="ID",
                        help="only this mutant of the one module given (OPERATOR#N, as printed with a survivor); repeatable")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--every-test", action="store_true",
                        help="run each mutant against all of its module's test files, not only the tests that ran its lines")
    parser.add_argument("--resume", action="append", default=[], metavar="LOG", type=Path,
                        help="take the outcome of each mutant that this earlier run's output records instead of running it")
    args = parser.parse_args()
    args.resumed = resumed(args.resume)

    table: dict[str, list[str]] = {}
    for pattern, tests in tomllib.loads(MODULES.read_text(encoding="utf-8"))["modules"].items():
        for path in sorted(PACKAGE.glob(pattern)):
            table[path.relative_to(PACKAGE).as_posix()] = tests
    selected = args.modules or list(table)
    unknown = [module for module in selected if module not in table]
    if unknown:
        parser.error(f"not in {MODULES.name}: {', '.join(unknown)}")
    if args.mutant and len(args.modules) != 1:
        parser.error("--mutant names mutants of exactly one module")
    if args.mutant:
        chosen(selected[0], args.mutant)

    started = time.monotonic()
    rows, survivors, failing = [], [], []
    drawn = ("the mutants named" if args.mutant else "every mutant" if args.all
             else f"seed {args.seed}, up to {args.sample} mutants per module")
    tried = "all of each module's test files" if args.every_test else "the tests that ran each mutated line"
    print(f"{drawn}, {args.jobs} jobs, against {tried}", flush=True)
    sharing: dict[tuple[str, ...], list[str]] = {}
    for module in selected:
        sharing.setdefault(tuple(table[module]), []).append(module)
    for tests, modules in sharing.items():
        with tempfile.TemporaryDirectory(prefix="gpucloud-snapshot-") as snapshot:
            package = Path(snapshot) / "gpucloud"
            shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
            ran = run_modules(modules, list(tests), package, args)
        for module, row, lived in ran:
            if row is None:
                failing.append(module)
                continue
            rows.append(row)
            survivors += lived
    header = ("module", "mutants", "sampled", "killed", "survived", "uncovered", "timeout", "score")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                        for i, (cell, width) in enumerate(zip(row, widths))))
    for mutant, outcome, (before, after) in survivors:
        unrun = " (no test runs its line)" if outcome == "uncovered" else ""
        print(f"\nsurvived{unrun}: infra/gpucloud/{mutant.module}:{mutant.line}  {mutant.id}\n  - {before}\n  + {after}")
    print(f"\n{len(survivors)} survived; {time.monotonic() - started:.0f} s")
    if failing:
        print(f"not run, their tests fail without any mutant: {', '.join(failing)}")
    return 2 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
