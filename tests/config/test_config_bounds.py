"""Every numeric key takes exactly its documented range: the bounds of `config_strategies.FIELDS`,
written down apart from the models, are checked against the models at and just past each end."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from config_strategies import FIELDS
from gpucloud.config import StackConfig

NUMERIC = {path: field for path, field in FIELDS.items() if field.kind in ("int", "float") and "<" not in path}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside `X`, `list[X]`, `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        found = _model_of(argument)
        if found:
            return found
    return None


def field_adapter(path: str) -> TypeAdapter:
    """The key's type with its constraints, found by walking the models along the camelCase path."""
    model: type[BaseModel] | None = StackConfig
    parts = [part for part in path.split(".") if part != "*"]
    for index, part in enumerate(parts):
        assert model is not None, path
        [info] = [info for name, info in model.model_fields.items() if (info.alias or name) == part]
        if index == len(parts) - 1:
            annotation = info.annotation
            if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
                annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
            return TypeAdapter(Annotated[annotation, *info.metadata]) if info.metadata else TypeAdapter(annotation)
        model = _model_of(info.annotation)
    raise AssertionError(path)


def accepts(adapter: TypeAdapter, value: float) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("path", sorted(NUMERIC))
def test_numeric_keys_take_their_range_and_nothing_past_it(path):
    field = NUMERIC[path]
    adapter = field_adapter(path)
    step = 1 if field.kind == "int" else 0.001
    if field.low is not None:
        assert accepts(adapter, field.low) is not field.low_exclusive, f"{path} at its low end {field.low}"
        assert not accepts(adapter, field.low - step), f"{path} below {field.low}"
        assert accepts(adapter, field.low + step)
    if field.high is not None:
        assert accepts(adapter, field.high), f"{path} at its high end {field.high}"
        assert not accepts(adapter, field.high + step), f"{path} above {field.high}"
