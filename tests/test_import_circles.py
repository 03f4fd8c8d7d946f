"""Each folder of the package reads top-down: its modules import each other in one direction only.

In `config`, the section models (plain data) are imported by `stack.py`; the cross-field rules
(`rules/`) and what is derived from the whole stack (`node_role.py`, `node_endpoints.py`) import the
models, and the loader imports the rules. A model module that imports `StackConfig` back, even only
for a type annotation under TYPE_CHECKING, closes a circle; in `components`, a parts module that
imports its component back does. These tests name the circle. (`testing` and `policy` are left out:
their handlers and rules import the package's front door, which imports them.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import ROOT

PACKAGE = ROOT / "infra" / "gpucloud"
CONFIG = PACKAGE / "config"
FOLDERS = ("config", "components", "lookups", "documents", "userdata", "pricing", "observability", "backend",
           "plan", "ops", "cli", "node")


def module_of(path: Path, root: Path, package: str) -> str:
    """`gpucloud.config.rules.image` for rules/image.py under `root`, the folder of `gpucloud.config`."""
    parts = (*package.split("."), *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of `package` it imports (at the top, in a function or under TYPE_CHECKING)."""
    modules = {module_of(path, root, package): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        anchor = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = anchor.rsplit(".", node.level - 1)[0] if node.level > 1 else anchor
                    base = f"{parent}.{base}" if base else parent
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            else:
                continue
            found.update(target for target in targets if target in modules and target.startswith(package))
        graph[name] = found - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_folder_has_an_import_circle(folder):
    found = circles(import_graph(PACKAGE / folder, f"gpucloud.{folder}"))
    assert not found, (
        f"modules of gpucloud/{folder} import each other in a circle: "
        + "; ".join(" <-> ".join(component) for component in found)
        + (". Put cross-field rules in config/rules/ and keep the models free of the stack." if folder == "config"
           else ". Move what both need below them (a module of plain data or pure functions)."))


def test_the_models_import_no_rule():
    """What stack.py reaches is data: no section model imports a rule, the loader or the derived modules."""
    graph = import_graph(CONFIG, "gpucloud.config")
    reached: set[str] = set()
    todo = ["gpucloud.config.stack"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph[module])
    upper = {module for module in graph if module.startswith("gpucloud.config.rules")
             or module in ("gpucloud.config", "gpucloud.config.loader", "gpucloud.config.stack_file")}
    assert not reached & upper, f"the stack's models reach {sorted(reached & upper)}"


def test_a_circle_is_named_with_its_modules(tmp_path):
    """The check itself: a model that imports StackConfig for an annotation only is a circle."""
    package = tmp_path / "config"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "stack.py").write_text("from gpucloud.config.access import AccessConfig\n")
    (package / "access.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gpucloud.config.stack import StackConfig\n")
    assert circles(import_graph(package, "gpucloud.config")) == [["gpucloud.config.access", "gpucloud.config.stack"]]
