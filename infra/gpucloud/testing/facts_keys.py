"""Why a facts file was refused, in words: pydantic's reason, but an unknown key named as one, with
the key it most likely meant (one beside it, or one a section deeper: `spotScores` written at the
top belongs under `capacity`). Facts files are written by hand from the guide as often as by
`gpucloud account snapshot`."""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel

LIKENESS = 0.7
"""How alike a key must be to a known one to be named (`bucket` is like `buckets`)."""


def reason(root: type[BaseModel], item: dict[str, Any]) -> str:
    """The reason for one of pydantic's errors of a facts file whose top model is `root`."""
    if item["type"] != "extra_forbidden":
        return item["msg"]
    *parents, key = [str(part) for part in item["loc"] if not isinstance(part, int)]
    model: type[BaseModel] | None = root
    for parent in parents:
        model = sections(model).get(parent) if model else None
    meant = _meant(key, sections(model) if model else {})
    return "is not a known key" + (f" (did you mean '{meant}'?)" if meant else " (see the account facts guide)")


def _meant(key: str, here: dict[str, type[BaseModel] | None]) -> str | None:
    known = {alias: alias for alias in here}
    known |= {f"{section}.{alias}": alias for section, inner in here.items() if inner for alias in sections(inner)}
    matches = difflib.get_close_matches(key.lower(), [alias.lower() for alias in known.values()], n=1, cutoff=LIKENESS)
    return min((path for path, alias in known.items() if matches and alias.lower() == matches[0]), key=len, default=None)


def sections(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    """The model's keys, each to the model it holds (through lists, maps and None), if any."""
    found = {}
    for name, field in model.model_fields.items():
        inner = [kind for kind in (field.annotation, *typing.get_args(field.annotation))
                 for kind in (kind, *typing.get_args(kind)) if isinstance(kind, type) and issubclass(kind, BaseModel)]
        found[field.alias or name] = inner[0] if inner else None
    return found
