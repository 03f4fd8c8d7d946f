"""Which of a module's tests run each mutated line: the baseline run under coverage, per test.

The runner runs a module's tests once unmutated with coverage.py measuring the module (in the
pytest process and in any Python subprocess it starts, through a ``sitecustomize`` that calls
``coverage.process_startup``) and with ``mutation_contexts`` naming the test each line ran for.
A mutant then runs only the tests that ran its lines, file by file and quickest first in each; a
mutant whose lines no test ran survives without a pytest run; lines run at import or collection
time (a constant, a default, a decorator) or inside a cached function (whose first caller alone
is recorded) run every test of the module's list.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

import coverage

from mutation_contexts import CONTEXT, TESTS

SITECUSTOMIZE = "import coverage\ncoverage.process_startup()\n"


def measuring(workdir: Path, module_files: list[Path]) -> dict[str, str]:
    """The environment (with PYTHONPATH entries to add) that measures these modules' lines per test."""
    hooks = workdir / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    config = workdir / "coveragerc"
    config.write_text("\n".join([
        "[run]", f"data_file = {workdir / 'coverage'}", "parallel = true",
        "include =", *(f"    {module_file}" for module_file in module_files),
        f"context = ${{{CONTEXT}-}}", "",
    ]), encoding="utf-8")
    return {"COVERAGE_PROCESS_START": str(config), TESTS: str(workdir / "tests.json"),
            "PYTHONPATH": f"{hooks}:{Path(__file__).parent}"}


@dataclass
class TestMap:
    """Which tests ran each line of one module, read back from a measured baseline."""

    __test__ = False

    lines: dict[int, set[str]]
    order: list[str]
    fixtures: dict[str, list[str]]
    source: str
    cached: list[tuple[int, int]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    rootdir: str = ""

    @classmethod
    def read(cls, workdir: Path, module_file: Path) -> TestMap:
        data = coverage.CoverageData(basename=str(workdir / "coverage"))
        data.read()
        data.set_query_contexts(None)
        name = next((f for f in data.measured_files() if Path(f).resolve() == module_file.resolve()), None)
        lines = {n: set(found) for n, found in data.contexts_by_lineno(name).items()} if name else {}
        tests = json.loads((workdir / "tests.json").read_text(encoding="utf-8"))
        source = module_file.read_text(encoding="utf-8")
        return cls(lines, tests["order"], tests["fixtures"], source, _cached_functions(source), tests["seconds"],
                   tests["rootdir"])

    def statement_lines(self, changed: set[int]) -> set[int]:
        """The changed lines and the first line of each statement that holds one (Python records either)."""
        found = set(changed)
        for node in ast.walk(ast.parse(self.source)):
            if isinstance(node, ast.stmt) and any(node.lineno <= n <= (node.end_lineno or node.lineno) for n in changed):
                body_starts = [child.lineno for part in ("body", "orelse", "finalbody", "handlers")
                               for child in getattr(node, part, []) or []]
                header_end = min(body_starts, default=(node.end_lineno or node.lineno) + 1) - 1
                if any(node.lineno <= n <= header_end for n in changed):
                    found.add(node.lineno)
        return found

    def tests_for(self, changed: set[int]) -> list[str] | None:
        """The tests that ran these lines, file by file in the module's order (fastest and most
        specific first: a file's module fixtures are set up once) and quickest first within a file,
        since pytest stops at the first failure; as absolute node ids (whatever pytest's rootdir is
        next time); [] when none did; None when every test may."""
        contexts = set().union(*(self.lines.get(n, set()) for n in self.statement_lines(changed)))
        if not contexts:
            return []
        if any(start <= n <= end for n in changed for start, end in self.cached):
            return None
        known, chosen = set(self.order), set()
        for context in contexts:
            if context in self.fixtures:
                chosen.update(self.fixtures[context])
            elif context in known:
                chosen.add(context)
            else:
                return None
        files = list(dict.fromkeys(test.split("::", 1)[0] for test in self.order))
        ran = sorted((test for test in self.order if test in chosen),
                     key=lambda test: (files.index(test.split("::", 1)[0]), self.seconds.get(test, 0.0)))
        return [f"{self.rootdir}/{test}" for test in ran]

    def timeout(self, tests: list[str]) -> float:
        """Four times what these tests took in the measured baseline, and a minute to start."""
        return 4 * sum(self.seconds.get(test.removeprefix(f"{self.rootdir}/"), 0.0) for test in tests) + 60


def combine(workdir: Path) -> None:
    """One data file of the pytest process's and its Python subprocesses' (parallel = true)."""
    measured = coverage.Coverage(data_file=str(workdir / "coverage"), config_file=False)
    measured.combine(data_paths=[str(workdir)])
    measured.save()


def _cached_functions(source: str) -> list[tuple[int, int]]:
    """The line spans of functions under a caching decorator (functools.cache, lru_cache, cached_property)."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                "cache" in ast.unparse(decorator) for decorator in node.decorator_list):
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans
