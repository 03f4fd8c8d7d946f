"""The config package reads top-down: its modules import each other in one direction only.

The section models (plain data) are imported by `stack.py`; the cross-field rules (`rules/`) and
what is derived from the whole stack (`node_role.py`, `node_endpoints.py`) import the models, and
the loader imports the rules. A model module that imports `StackConfig` back, even only for a type
annotation under TYPE_CHECKING, closes a circle; this test names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

CONFIG = ROOT / "infra" / "gpucloud" / "config"


def module_of(path: Path, root: Path) -> str:
    """`gpucloud.config.rules.image` for config/rules/image.py under `root` (the config folder)."""
    parts = ("gpucloud", *path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def config_imports(root: Path) -> dict[str, set[str]]:
    """module -> the config modules it imports (at the top, in a function or under TYPE_CHECKING)."""
    package = f"gpucloud.{root.name}"
    modules = {module_of(path, root): path for path in root.rglob("*.py")}
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


def test_the_config_package_has_no_import_circle():
    found = circles(config_imports(CONFIG))
    assert not found, (
        "config modules import each other in a circle (a model module importing StackConfig or a rule back?): "
        + "; ".join(" <-> ".join(component) for component in found)
        + ". Put cross-field rules in config/rules/ and keep the models free of the stack.")


def test_the_models_import_no_rule():
    """What stack.py reaches is data: no section model imports a rule, the loader or the derived modules."""
    graph = config_imports(CONFIG)
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
    assert circles(config_imports(package)) == [["gpucloud.config.access", "gpucloud.config.stack"]]
