""""Did you mean" for stack-file keys: a near miss of the `gpu-cloud` namespace, and an unknown key
next to the known ones it most resembles; and for any word among the ones known."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from gpucloud.config.errors import NAMESPACE

NEAR_MISS_RATIO = 0.75
"""How alike a namespace must be to `gpu-cloud` to count as a misspelling of it (`gpucloud`,
`gpu_cloud`, `gpu-clod`, `gpucloud` all are; `aws` and a team's own `myproject` are not)."""


def is_near_miss_namespace(namespace: str) -> bool:
    if namespace == NAMESPACE:
        return False
    folded = namespace.lower().replace("_", "-")
    return folded == NAMESPACE or difflib.SequenceMatcher(None, folded, NAMESPACE).ratio() >= NEAR_MISS_RATIO


def misspelt_namespace_problems(keys: Iterable[Any]) -> list[tuple[str, str]]:
    """A key such as `gpucloud:project` would be passed over silently (Pulumi gives other namespaces to
    their owners) and the stack would then lack `gpu-cloud:project`: name it instead."""
    problems = []
    for key in keys:
        namespace, colon, name = str(key).partition(":")
        if colon and is_near_miss_namespace(namespace):
            problems.append((str(key), f"is not in the {NAMESPACE} namespace: did you mean '{NAMESPACE}:{name}'?"))
    return problems


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The config model an annotation holds, through Optional, lists and Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        found = _model_of(argument)
        if found is not None:
            return found
    return None


def _aliases(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    return {(field.alias or name): _model_of(field.annotation) for name, field in model.model_fields.items()}


PROVIDED_BY_ANOTHER_KEY: dict[str, dict[str, str]] = {
    "GroupConfig": {
        "efa": "EFA comes with 'multiNode: true' (EFA on every network card, one cluster placement group)",
        "placementgroup": "a cluster placement group comes with 'multiNode: true', with EFA on every network card",
    },
}
"""Keys users reach for whose meaning another key already carries, by model and lower-cased key."""


def did_you_mean(root: type[BaseModel], location: tuple[Any, ...]) -> str:
    """For pydantic's location of an unknown key (its parent's path, then the key), the closest known
    key of the model it sits in, as " (did you mean 'x'?)", or "" when none is close."""
    model: type[BaseModel] | None = root
    for part in location[:-1]:
        if isinstance(part, int) or model is None:
            continue
        model = _aliases(model).get(str(part))
    if model is None or not location:
        return ""
    provided = PROVIDED_BY_ANOTHER_KEY.get(model.__name__, {}).get(str(location[-1]).lower())
    if provided:
        return f" ({provided})"
    return closest(str(location[-1]), _aliases(model)) or _deeper(str(location[-1]), model)


NESTED_CUTOFF = 0.7
"""How alike a key must be to one deeper in the model to be named as its place: `notebookUserPolicy`
is 0.71 like `userPolicy`; `colour` is like none."""


def _paths(model: type[BaseModel], prefix: str = "", depth: int = 3) -> dict[str, str]:
    """Every key below the model's own, as its dotted path (a list of models as `name[]`) to its name."""
    found: dict[str, str] = {}
    if depth == 0:
        return found
    for name, field in model.model_fields.items():
        alias = field.alias or name
        inner = _model_of(field.annotation)
        if inner is None:
            continue
        listed = typing.get_origin(field.annotation) is list or any(
            typing.get_origin(argument) is list for argument in typing.get_args(field.annotation))
        here = f"{prefix}{alias}{'[]' if listed else ''}."
        found |= {here + key: key for key in _aliases(inner)}
        found |= _paths(inner, here, depth - 1)
    return found


def _deeper(word: str, model: type[BaseModel]) -> str:
    """A key that belongs under one of this model's sections, as " (did you mean 'a.b.key'?)"."""
    paths = _paths(model)
    matches = difflib.get_close_matches(word.lower(), [key.lower() for key in paths.values()], n=1, cutoff=NESTED_CUTOFF)
    if not matches:
        return ""
    place = min((path for path, key in paths.items() if key.lower() == matches[0]), key=lambda path: (path.count("."), path))
    return f" (did you mean '{place}'?)"


def closest(word: str, known: Iterable[str]) -> str:
    """The known word most like `word`, as " (did you mean 'x'?)", or "" when none is close: for
    keys, and for values from a list AWS gives (a region's instance types)."""
    matches = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""
