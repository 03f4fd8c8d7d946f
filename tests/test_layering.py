"""Imports follow the data's one-way path: stack config → models → AWS facts → components → plan.

A module may import from folders earlier in that path, never from later ones; the node agent and
the state backend stand alone (the backend shares only `bucket_rules`, the TLS and lifecycle rules its
state bucket and every stack's artifacts bucket keep). Function-level imports count too.
"""

from __future__ import annotations

import ast

import pytest

from support import ROOT

PACKAGE = ROOT / "infra" / "gpucloud"
LATER = ("gpucloud.program", "gpucloud.testing", "gpucloud.plan", "gpucloud.connect", "gpucloud.ops", "gpucloud.cli")
EVERYTHING = (
    "gpucloud.config", "gpucloud.lookups", "gpucloud.components", "gpucloud.documents", "gpucloud.naming",
    "gpucloud.limits", "gpucloud.bucket_rules",
    "gpucloud.userdata", "gpucloud.policy", "gpucloud.pricing", "gpucloud.backend", "gpucloud.node",
    "gpucloud.observability", *LATER,
)

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "gpucloud.naming": EVERYTHING,
    "gpucloud.limits": EVERYTHING,
    "gpucloud.bucket_rules": EVERYTHING,
    "gpucloud.documents": tuple(name for name in EVERYTHING if name not in ("gpucloud.naming", "gpucloud.documents", "gpucloud.bucket_rules")),
    "gpucloud.config": ("gpucloud.lookups", "gpucloud.components", "gpucloud.userdata", "gpucloud.policy",
                        "gpucloud.pricing", "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.lookups": ("gpucloud.components", "gpucloud.userdata", "gpucloud.policy", "gpucloud.pricing",
                         "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.userdata": ("gpucloud.config", "gpucloud.lookups", "gpucloud.components", "gpucloud.policy",
                          "gpucloud.pricing", "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.components": ("gpucloud.policy", "gpucloud.pricing", "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.policy": tuple(name for name in EVERYTHING if name != "gpucloud.policy"),
    "gpucloud.pricing": ("gpucloud.lookups", "gpucloud.components", "gpucloud.userdata", "gpucloud.policy",
                         "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.observability": ("gpucloud.lookups", "gpucloud.components", "gpucloud.userdata", "gpucloud.policy",
                               "gpucloud.backend", "gpucloud.node", *LATER),
    "gpucloud.program": ("gpucloud.policy", "gpucloud.pricing", "gpucloud.backend", "gpucloud.node",
                         "gpucloud.testing", "gpucloud.plan", "gpucloud.connect", "gpucloud.ops", "gpucloud.cli"),
    # The component provider serves the components to other languages, as the program builds them.
    "gpucloud.component_provider": ("gpucloud.policy", "gpucloud.pricing", "gpucloud.backend", "gpucloud.node",
                                    "gpucloud.testing", "gpucloud.plan", "gpucloud.connect", "gpucloud.ops",
                                    "gpucloud.cli"),
    "gpucloud.testing": ("gpucloud.config", "gpucloud.components", "gpucloud.userdata", "gpucloud.policy",
                         "gpucloud.pricing", "gpucloud.backend", "gpucloud.node", "gpucloud.program",
                         "gpucloud.plan", "gpucloud.cli"),
    "gpucloud.plan": ("gpucloud.backend", "gpucloud.node", "gpucloud.connect", "gpucloud.ops", "gpucloud.cli"),
    "gpucloud.connect": ("gpucloud.components", "gpucloud.testing", "gpucloud.plan", "gpucloud.cli"),
    "gpucloud.ops": ("gpucloud.components", "gpucloud.testing", "gpucloud.plan", "gpucloud.connect", "gpucloud.cli"),
    "gpucloud.backend": tuple(name for name in EVERYTHING if name not in ("gpucloud.backend", "gpucloud.bucket_rules")),
    "gpucloud.node": tuple(name for name in EVERYTHING if name != "gpucloud.node"),
}
"""What each part of the package must not import. The engine stays generic (teams run their own
programs on it), so it knows no gpu-cloud component; it reads one AWS fact (the DLAMI parameter)."""


def module_name(path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path) -> set[str]:
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def part_of(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


MODULES = sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda path: module_name(path))
def test_module_imports_nothing_later_in_the_data_path(path):
    module = module_name(path)
    rules = [prefix for prefix in FORBIDDEN if part_of(module, prefix)]
    forbidden = [banned for prefix in rules for banned in FORBIDDEN[prefix]]
    broken = sorted(name for name in imported_modules(path) if any(part_of(name, banned) for banned in forbidden))
    assert broken == [], f"{module} imports {broken}"


def test_the_rules_cover_every_part_of_the_package():
    tops = {module_name(path).split(".")[1] for path in MODULES if module_name(path) != "gpucloud"}
    assert {f"gpucloud.{top}" for top in tops} <= set(FORBIDDEN) | {"gpucloud.cli", "gpucloud.data"}
