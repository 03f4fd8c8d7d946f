"""Which pulumi-aws resource types take a ``tags`` input, read from the installed SDK.

pulumi_aws/__init__.py registers every resource type token with the Python module
and class that implement it (``"aws:lambda/function:Function"`` lives in
``pulumi_aws.lambda_``, so the token alone is not enough).  A type is taggable when
its class accepts a ``tags`` argument.  Each answer imports one pulumi_aws
submodule at most once and is cached; the registry is parsed once.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import keyword
import re
import warnings
from pathlib import Path

_RESOURCE_MODULES = re.compile(r'resource_modules="""\s*(\[.*?\])\s*"""', re.S)


class SdkUnavailableError(RuntimeError):
    """pulumi_aws is not importable, so taggability cannot be decided."""


@functools.lru_cache(maxsize=1)
def _registered_classes() -> dict[str, tuple[str, str]]:
    """Type token → (module, class name), from the SDK's own registration table."""
    spec = importlib.util.find_spec("pulumi_aws")
    if spec is None or spec.origin is None:
        raise SdkUnavailableError("pulumi_aws is not installed; install gpucloud's dependencies")
    match = _RESOURCE_MODULES.search(Path(spec.origin).read_text(encoding="utf-8"))
    if match is None:
        return {}
    classes: dict[str, tuple[str, str]] = {}
    for module in json.loads(match.group(1)):
        for token, class_name in module.get("classes", {}).items():
            classes[token] = (module["fqn"], class_name)
    return classes


def _locate(type_token: str) -> tuple[str, str] | None:
    registered = _registered_classes().get(type_token)
    if registered is not None:
        return registered
    # Tokens missing from the table (aliases of renamed types) follow the naming scheme.
    parts = type_token.split(":")
    if len(parts) != 3 or parts[0] != "aws":
        return None
    module = parts[1].split("/")[0]
    if module == "index":
        return "pulumi_aws", parts[2]
    if keyword.iskeyword(module):
        module += "_"
    return f"pulumi_aws.{module}", parts[2]


@functools.cache
def is_taggable(type_token: str) -> bool:
    """Whether resources of this pulumi-aws type accept ``tags``; False for other packages."""
    if not type_token.startswith("aws:"):
        return False
    located = _locate(type_token)
    if located is None:
        return False
    module_name, class_name = located
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # deprecated resources warn on import
            module = importlib.import_module(module_name)  # pulumi_aws loads submodules lazily:
            resource_class = getattr(module, class_name)  # the attribute access imports them
    except (ImportError, AttributeError):
        return False
    internal_init = getattr(resource_class, "_internal_init", None)
    if internal_init is not None:
        return "tags" in inspect.signature(internal_init).parameters
    args_class = getattr(module, f"{class_name}Args", None)
    return isinstance(getattr(args_class, "tags", None), property)
