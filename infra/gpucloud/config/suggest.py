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
    return f" ({provided})" if provided else closest(str(location[-1]), _aliases(model))


def closest(word: str, known: Iterable[str]) -> str:
    """The known word most like `word`, as " (did you mean 'x'?)", or "" when none is close: for
    keys, and for values from a list AWS gives (a region's instance types)."""
    matches = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""
