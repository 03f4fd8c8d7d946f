"""A Pulumi program on disk, found, configured and run the way the Pulumi CLI does it.

`gpucloud plan --program PATH` takes a program file or a folder: the folder's Pulumi.yaml
names the entry point (`main`, a folder holding `__main__.py` or a file), else the folder's
own `__main__.py` runs. While it runs, the program's folder is first on sys.path and the
working directory, so `from helper import x` and relative paths work as under `pulumi up`;
both are restored afterwards, and the program's own modules are unloaded. `--handlers FILE`
files run first, to teach the engine resource types the program uses and it lacks.
"""

from __future__ import annotations

import os
import re
import runpy
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ProgramError(Exception):
    """A program that cannot be found, read or configured, or that raised while it ran."""


class ProgramFailed(ProgramError):
    """The program raised: one line naming the program and the exception (the cause keeps the traceback)."""

    def __init__(self, program: str, error: BaseException):
        self.program = program
        self.error = error
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        detail = f": {lines[0]}" + (" …" if len(lines) > 1 else "") if lines else ""
        super().__init__(f"program {program} failed: {type(error).__name__}{detail}")


@dataclass(frozen=True)
class ProgramSource:
    """Where a program starts and what its Pulumi.yaml says."""

    entry: Path
    """The file that runs as `__main__`."""
    directory: Path
    """Put first on sys.path and made the working directory while the program runs."""
    project: str | None = None
    """Pulumi.yaml `name`, which Pulumi puts in every URN."""
    config_defaults: Mapping[str, Any] = field(default_factory=dict)
    """Pulumi.yaml `config:` values and defaults, under full `namespace:key` names."""


def _project_file(directory: Path) -> Path | None:
    for name in ("Pulumi.yaml", "Pulumi.yml"):
        if (directory / name).is_file():
            return directory / name
    return None


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ProgramError(f"{path}: cannot be read: {' '.join(str(error).split())}") from None


def _entry_of(target: Path, described_by: str) -> Path:
    if target.is_dir():
        entry = target / "__main__.py"
        if not entry.is_file():
            raise ProgramError(f"{described_by}: {target} has no __main__.py")
        return entry
    if target.is_file():
        return target
    raise ProgramError(f"{described_by}: {target} does not exist")


def locate(path: str | Path) -> ProgramSource:
    """The program a path names: a .py file, or a folder with a Pulumi.yaml or a __main__.py."""
    path = Path(path)
    if path.is_file():
        return ProgramSource(entry=path, directory=path.parent)
    if not path.is_dir():
        raise ProgramError(f"{path}: no such Pulumi program file or folder")
    project_file = _project_file(path)
    if project_file is None:
        entry = _entry_of(path, f"{path} (no Pulumi.yaml)")
        return ProgramSource(entry=entry, directory=path)
    document = _load_yaml(project_file)
    if not isinstance(document, Mapping):
        raise ProgramError(f"{project_file}: not a Pulumi project file (no top-level map)")
    project = document.get("name")
    if not isinstance(project, str) or not project:
        raise ProgramError(f"{project_file}: needs a project name ('name:')")
    main = document.get("main") or "."
    entry = _entry_of(path / str(main), f"{project_file} main {main!r}")
    return ProgramSource(
        entry=entry,
        directory=entry.parent,
        project=project,
        config_defaults=_project_config(document.get("config"), project, project_file),
    )


def _full_key(key: Any, project: str) -> str:
    key = str(key)
    return key if ":" in key else f"{project}:{key}"


def _project_config(section: Any, project: str, source: Path) -> dict[str, Any]:
    """Pulumi.yaml `config:` as values: `key: value`, or `key: {type, default, ...}` with a default."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ProgramError(f"{source}: 'config:' must be a map")
    values = {}
    for key, value in section.items():
        if isinstance(value, Mapping) and ("type" in value or "default" in value or "description" in value):
            if "default" in value:
                values[_full_key(key, project)] = value["default"]
        else:
            values[_full_key(key, project)] = value
    return values


def read_stack_config(path: str | Path, project: str) -> tuple[str, dict[str, Any]]:
    """The stack name and `config:` values of a `Pulumi.<stack>.yaml`, keys as Pulumi qualifies them.

    Bare keys belong to the project's namespace. Objects and lists stay structured (the engine hands
    them to the program as JSON, as Pulumi does). Secrets cannot be decrypted offline and are refused.
    """
    path = Path(path)
    match = re.fullmatch(r"Pulumi\.(.+)\.ya?ml", path.name)
    stack = match.group(1) if match else path.stem
    if not path.is_file():
        raise ProgramError(f"{path}: no such stack config file")
    document = _load_yaml(path) or {}
    if not isinstance(document, Mapping):
        raise ProgramError(f"{path}: not a stack config file (no top-level map)")
    section = document.get("config") or {}
    if not isinstance(section, Mapping):
        raise ProgramError(f"{path}: 'config:' must be a map")
    values = {}
    for key, value in section.items():
        full_key = _full_key(key, project)
        if isinstance(value, Mapping) and "secure" in value:
            raise ProgramError(
                f"{path}: {full_key} is a secret, which the offline plan cannot decrypt; "
                "plan with a copy of the file that gives a placeholder value instead"
            )
        values[full_key] = value
    return stack, values


def load_engine_handlers(paths: Sequence[str | Path]) -> None:
    """Run each file that registers engine handlers (`gpucloud.testing.register_resource`) for the
    resource types a team's program uses and the engine lacks."""
    for path in paths:
        file = Path(path)
        if not file.is_file():
            raise ProgramError(f"handlers file {path} does not exist")
        try:
            runpy.run_path(str(file), run_name=f"gpucloud_handlers_{file.stem}")
        except Exception as error:
            raise ProgramFailed(f"handlers file {path}", error) from error


@contextmanager
def program_environment(source: ProgramSource) -> Iterator[None]:
    """The program's folder first on sys.path and as working directory; all restored afterwards."""
    directory = source.directory.resolve()
    saved_path, saved_cwd, saved_modules = list(sys.path), os.getcwd(), set(sys.modules)
    sys.path.insert(0, str(directory))
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            module_file = getattr(sys.modules.get(name), "__file__", None)
            if module_file and Path(module_file).resolve().is_relative_to(directory):
                del sys.modules[name]
