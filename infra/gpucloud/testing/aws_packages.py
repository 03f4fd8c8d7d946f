"""pulumi-aws's service packages, loaded a name at a time in the engine's process.

`import pulumi_aws` defers each service package (`pulumi_aws.ec2`, ...) until its first use, and
then runs its `__init__`, which star-imports every module of the service: the first
`aws.ec2.LaunchTemplate` loads all 182 of ec2's modules, most of them one resource or data source
each. A plan uses a handful of them per service (20 of ec2's for `vision-train`), and the rest
were half of pulumi-aws's load time in a cold plan (the ten services a plan uses: 0.89 s whole,
0.36 s for only their shared `_inputs` and `outputs` modules; 2026-11-27, pulumi-aws 7.51.1).

`load_names_on_use` swaps each service package not yet loaded for one that resolves a name on
first use from the module the package's `__init__` would have taken it from: same module, same
object. It reads that from the `__init__` itself (its `from .x import *` lines, in order, later
ones winning as in a star import) and each module's `__all__`. A package whose `__init__` is
anything but such imports, a name it cannot place, `dir()` and `from pulumi_aws.ec2 import *` all
run the real `__init__` instead, so nothing resolves differently, only later. The engine's
process installs it (`gpucloud.testing`); `pulumi up` runs the program without it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any

_IMPORT_LINE = re.compile(r"from \.(?P<star>\w+) import \*|from \. import (?P<module>\w+)")
_HARMLESS_LINE = re.compile(r"(#.*|import builtins as _builtins|from \.\. import _utilities|import typing)?")
_ALL = re.compile(r"^__all__ = (\[)", re.MULTILINE)
_CHUNK = 1 << 16


class ServicePackage(types.ModuleType):
    """A pulumi-aws service package whose names are imported from their modules on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            if name == "__all__":  # a star import of the package: give it the whole package
                self._load_whole()
            raise AttributeError(name)
        source = _sources(self).get(name)
        if source is None:
            if _is_submodule(self, name):  # bound by its import, as in the whole package
                return importlib.import_module(f"{self.__name__}.{name}")
            self._load_whole()
            try:
                return self.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        module_name, whole_module = source
        module = importlib.import_module(f"{self.__name__}.{module_name}")
        value = module if whole_module else getattr(module, name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        """Importing a submodule binds it on its package under its own name; where the package's
        star imports bind that name to what a module exports (`get_ami_ids`, the function, not
        its module), leave it to them, as the whole package's later star import would."""
        if (
            isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
            and _sources(self).get(name, (name, True)) != (name, True)
        ):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        self._load_whole()
        return list(self.__dict__)

    def _load_whole(self) -> None:
        """Run the package's real `__init__` in this module, once."""
        if not self.__dict__.get("_gpucloud_whole"):
            self.__dict__["_gpucloud_whole"] = True
            self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]


def _sources(package: ServicePackage) -> dict[str, tuple[str, bool]]:
    """Each public name of `package` -> (the module it comes from, whether it is that module), as
    its `__init__` would bind it; empty when the `__init__` does anything else (then every name
    loads the whole package)."""
    cached = package.__dict__.get("_gpucloud_sources")
    if cached is None:
        folder = Path(package.__path__[0])
        imports = package.__dict__.get("_gpucloud_imports")
        if imports is None:
            imports = _imports_only((folder / "__init__.py").read_text())
        cached = _read_sources(folder, imports or [])
        package.__dict__["_gpucloud_sources"] = cached
    return cached


def _is_submodule(package: ServicePackage, name: str) -> bool:
    folder = Path(package.__path__[0])
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _imports_only(init_text: str) -> list[tuple[str, bool]] | None:
    """The modules a package's `__init__` imports, in order ((module, whether it is bound whole)),
    or None when it does anything else (`pulumi_aws.config`, say, swaps its own class)."""
    imported = []
    for line in init_text.splitlines():
        found = _IMPORT_LINE.fullmatch(line.strip())
        if found is None:
            if _HARMLESS_LINE.fullmatch(line.strip()):
                continue
            return None
        imported.append((found["module"], True) if found["module"] else (found["star"], False))
    return imported


def _read_sources(folder: Path, imports: list[tuple[str, bool]]) -> dict[str, tuple[str, bool]]:
    sources: dict[str, tuple[str, bool]] = {}
    for module, whole in imports:
        if whole:
            sources[module] = (module, True)
            continue
        names = _exported_names(folder / f"{module}.py")
        if names is None:
            return {}
        sources.update((name, (module, False)) for name in names)
    return sources


def _exported_names(path: Path) -> list[str] | None:
    """The module's `__all__` list, read from its source without running it (None if it has no
    literal one: the whole package is loaded then)."""
    text = ""
    with path.open(encoding="utf-8") as source:
        while True:
            chunk = source.read(_CHUNK)
            text += chunk
            start = _ALL.search(text)
            end = text.find("]", start.start(1)) if start else -1
            if end >= 0 and "\n" in text[end:]:
                if text[end + 1 : text.index("\n", end)].strip():
                    return None  # more than a list literal: `__all__ = [...] + other`
                try:
                    names = ast.literal_eval(text[start.start(1) : end + 1])
                except (SyntaxError, ValueError):
                    return None
                return names if isinstance(names, list) and all(isinstance(n, str) for n in names) else None
            if not chunk or (start is None and len(text) > 4 * _CHUNK):
                return None


def service_package(
    full_name: str, folder: Path, imports: list[tuple[str, bool]] | None = None
) -> ServicePackage:
    """A `ServicePackage` for the package in `folder`, not yet run, put in `sys.modules`;
    `imports` is what `_imports_only` read of its `__init__`, when the caller has it already."""
    init = folder / "__init__.py"
    spec = importlib.util.spec_from_file_location(full_name, init, submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None, init
    package = importlib.util.module_from_spec(spec)
    package.__class__ = ServicePackage
    package.__dict__["_gpucloud_imports"] = imports
    sys.modules[full_name] = package
    return package  # type: ignore[return-value]


def load_names_on_use() -> int:
    """Swap every pulumi-aws service package not yet loaded (still pulumi's `_LazyModule`) for a
    `ServicePackage`; the number swapped. Those already loaded are left as they are."""
    import pulumi_aws

    root = Path(pulumi_aws.__path__[0])
    swapped = 0
    for full_name, module in list(sys.modules.items()):
        parent, _, short = full_name.rpartition(".")
        if parent != "pulumi_aws" or type(module).__name__ != "_LazyModule":
            continue
        init = root / short / "__init__.py"
        imports = _imports_only(init.read_text()) if init.is_file() else None
        if imports:
            setattr(pulumi_aws, short, service_package(full_name, root / short, imports))
            swapped += 1
    return swapped
