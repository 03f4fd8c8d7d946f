"""Reading `stacks/Pulumi.<stack>.yaml` directly, for offline use (plan, tests), with every way a
file can be broken reported on one line that names it."""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from gpucloud.config.errors import ConfigError
from gpucloud.config.loader import parse_stack_config, split_namespace
from gpucloud.config.stack import StackSettings


class _StackFileLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (plain YAML keeps the last one,
    so a second `gpu-cloud:groups` would silently replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # SafeLoader's own construct_mapping refuses it, with its position
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StackFileLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StackFileLoader.construct_mapping)


def _one_line(error: yaml.YAMLError) -> str:
    """PyYAML's multi-line report (context, problem, a caret under the line) as one line."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"{problem}{where}".replace("\n", " ")


def load_stack_file(path: str | Path, *, region: str | None = None) -> StackSettings:
    """Read `stacks/Pulumi.<stack>.yaml` directly, for offline use (plan, tests)."""
    path = Path(path)
    match = re.fullmatch(r"Pulumi\.(.+)\.ya?ml", path.name)
    stack = match.group(1) if match else path.stem
    source = str(path)
    where = f"stack {stack!r} ({source})"
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StackFileLoader)  # noqa: S506 - a SafeLoader
    except FileNotFoundError:
        raise ConfigError(where, [("file", "does not exist")]) from None
    except IsADirectoryError:
        raise ConfigError(where, [("file", "is a directory, not a stack file")]) from None
    except OSError as error:
        raise ConfigError(where, [("file", f"cannot be read: {error.strerror or error}")]) from None
    except UnicodeDecodeError as error:
        raise ConfigError(where, [("file", f"is not UTF-8 text (byte {error.start}: {error.reason})")]) from None
    except yaml.YAMLError as error:
        raise ConfigError(where, [("file", f"is not valid YAML: {_one_line(error)}")]) from None
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ConfigError(where, [("config", "the file needs a top-level 'config:' map")])
    values, file_region = split_namespace(document["config"], stack=stack, source=source)
    chosen_region = region or file_region
    if not chosen_region:
        raise ConfigError(where, [("aws:region", "is not set")])
    return parse_stack_config(values, stack=stack, source=source, region=chosen_region)
