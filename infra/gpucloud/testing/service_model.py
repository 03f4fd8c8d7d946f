"""AWS's own input constraints, checked on every call the engine makes before moto sees it.

botocore's client validates what it sends only as far as required members, types and minimums
(botocore/validate.py: `VALIDATED_METADATA_ATTRS = {'required', 'min', ...}`); the service
enforces the rest of its model: `enum` values, `pattern`, `max` lengths and sizes, numeric
ranges. moto mostly does not. `install(client)` hooks a check into a client's
`before-parameter-build` event, so every call through the engine's `Account.client(...)` is
walked against the operation's input shape; a value AWS would refuse raises
ServiceModelViolation, which names the resource being applied (`names_what_it_applies`) or
fails the invoke being answered.

Where AWS takes values a stale model enum lacks, the reviewed table in
`gpucloud/data/aws_model_exceptions.json` adds them, each with its evidence. A pattern that
cannot be translated from Java exactly (`model_patterns`) is not guessed at: the value is left
unchecked and the shape is listed in `UNCHECKED_PATTERNS`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ParamValidationError
from botocore.model import OperationModel, Shape
from botocore.validate import ParamValidator

from gpucloud.testing.model_patterns import ASCII_LIMIT, UntranslatablePattern, compiled, matches

EXCEPTIONS_PATH = Path(__file__).resolve().parents[1] / "data" / "aws_model_exceptions.json"
ENUM_LISTED = 20
"""An enum this long or shorter is listed in a violation; EC2's InstanceType, some 1,400 values, is not."""

UNCHECKED_PATTERNS: dict[tuple[str, str], str] = {}
"""(service, shape) -> why its pattern is not checked, for each such shape a call has reached."""


@dataclass(frozen=True)
class Violation:
    """One member of a call that AWS's model refuses."""

    path: str
    """Where in the call's parameters, `MixedInstancesPolicy.LaunchTemplate.Overrides[0].InstanceType`."""
    value: Any
    rule: str
    """What the model says, and where: `not one of a, b (botocore autoscaling 2011-01-01 X enum)`."""

    def __str__(self) -> str:
        shown = repr(self.value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"{self.path} = {shown}: {self.rule}"


class ServiceModelViolation(Exception):
    """A call AWS would answer with a validation error, caught before moto accepts it."""

    def __init__(self, service: str, operation: str, violations: list[Violation], applying: str | None = None):
        self.service, self.operation, self.violations = service, operation, violations
        self.name_applying(applying)

    def name_applying(self, applying: str | None) -> None:
        """Name the resource or invoke whose call it was, in place (notes and traceback stay)."""
        self.applying = applying
        where = f" for {applying}" if applying else ""
        self.args = (
            f"AWS would refuse {self.service} {self.operation}{where}: "
            + "; ".join(str(violation) for violation in self.violations),
        )


@contextmanager
def applying(what: str) -> Iterator[None]:
    """Name `what` (`aws:backup/plan:Plan "vision-train-backup"`) in the violations raised inside."""
    try:
        yield
    except ServiceModelViolation as violation:
        if not violation.applying:
            violation.name_applying(what)
        raise


def names_what_it_applies(method: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """For the engine's `new_resource`: a violation raised while applying a resource names it
    (`aws:backup/plan:Plan "vision-backup"`) and fails the run. (One raised while answering an
    invoke fails that invoke, as any AWS error does: `MotoEngine.call`.)"""

    @functools.wraps(method)
    def applying_it(engine: Any, args: Any) -> Any:
        with applying(f'{args.typ} "{args.name}"'):
            return method(engine, args)
    return applying_it


@functools.cache
def accepted_beyond_model() -> dict[tuple[str, str], frozenset[str]]:
    """(service, enum shape) -> the values AWS accepts that the model's enum lacks, from the reviewed table."""
    table = json.loads(EXCEPTIONS_PATH.read_text(encoding="utf-8"))
    return {(entry["service"], entry["shape"]): frozenset(entry["values"]) for entry in table["accepted"]}


Check = Callable[[Any, str, list[Violation]], None]


def check_unsent(client: Any, operation: str, params: dict[str, Any]) -> None:
    """For a call moto lacks, which the engine records instead of sending (`CreatePlacementGroup`):
    what botocore's client and AWS's model would check, the call itself not made. Raises
    botocore's ParamValidationError or ServiceModelViolation."""
    model = client.meta.service_model.operation_model(operation)
    violations = check_params(model, params)
    if violations:
        raise ServiceModelViolation(client.meta.service_model.service_name, operation, violations)
    report = ParamValidator().validate(params, model.input_shape)
    if report.has_errors():
        raise ParamValidationError(report=report.generate_report())


def install(client: Any) -> None:
    """Check every call `client` makes against its service model before the request is built."""
    client.meta.events.register("before-parameter-build", _check_call, unique_id="gpucloud-service-model-checks")


def _check_call(params: dict[str, Any], model: OperationModel, **_: Any) -> None:
    violations = check_params(model, params)
    if violations:
        raise ServiceModelViolation(model.service_model.service_name, model.name, violations)


_OPERATION_CHECKS: dict[tuple[str, str, str], Check | None] = {}


def operation_check(model: OperationModel) -> Check | None:
    """The compiled check of an operation's input, or None where nothing in it is constrained;
    compiled once per process (a client of each account has its own model objects)."""
    service, version = model.service_model.service_name, model.service_model.api_version
    key = (service, version, model.name)
    if key not in _OPERATION_CHECKS:
        shape = model.input_shape
        _OPERATION_CHECKS[key] = _ShapeChecks(service, version).check(shape) if shape is not None else None
    return _OPERATION_CHECKS[key]


def check_params(model: OperationModel, params: dict[str, Any]) -> list[Violation]:
    """What AWS's model refuses in `params` for `model`'s operation (the check `install` runs)."""
    check = operation_check(model)
    violations: list[Violation] = []
    if check is not None:
        check(params, "", violations)
    return violations


_SHAPE_CHECKS: dict[tuple[str, str, str], Check | None] = {}


def forget_compiled_checks() -> None:
    """Compile again from the models and the reviewed table (after the table has changed)."""
    _OPERATION_CHECKS.clear()
    _SHAPE_CHECKS.clear()
    accepted_beyond_model.cache_clear()


class _ShapeChecks:
    """Compiles a shape into one function that checks a value of it, or None where neither the
    shape nor anything under it is constrained; compiled once per service, version and shape."""

    def __init__(self, service: str, version: str):
        self.service, self.version = service, version

    def source(self, shape: Shape, trait: str) -> str:
        return f"botocore {self.service} {self.version} {shape.name} {trait}"

    def check(self, shape: Shape) -> Check | None:
        key = (self.service, self.version, shape.name)
        if key in _SHAPE_CHECKS:
            return _SHAPE_CHECKS[key]
        if shape.type_name == "structure" and not shape.is_document_type:
            return self.structure(shape, key)
        built = {
            "string": self.string, "list": self.sequence, "map": self.mapping, "blob": self.blob,
            "integer": self.number, "long": self.number, "float": self.number, "double": self.number,
        }.get(shape.type_name, lambda shape: None)(shape)
        _SHAPE_CHECKS[key] = built
        return built

    def structure(self, shape: Shape, key: tuple[str, str, str]) -> Check | None:
        members: dict[str, Check] = {}

        def check_structure(value: Any, path: str, violations: list[Violation]) -> None:
            if isinstance(value, dict):
                for name, item in value.items():
                    member = members.get(name)
                    if member is not None and item is not None:
                        member(item, f"{path}.{name}" if path else name, violations)

        _SHAPE_CHECKS[key] = check_structure  # a recursive shape finds itself while compiling
        for name, member_shape in shape.members.items():
            member = self.check(member_shape)
            if member is not None:
                members[name] = member
        if not members:
            _SHAPE_CHECKS[key] = None
            return None
        return check_structure

    def string(self, shape: Shape) -> Check | None:
        rules: list[Check] = []
        if shape.enum:
            allowed = frozenset(shape.enum) | accepted_beyond_model().get((self.service, shape.name), frozenset())
            listed = ", ".join(shape.enum) if len(shape.enum) <= ENUM_LISTED else f"the {len(shape.enum)} values"
            rule = f"not one of {listed} ({self.source(shape, 'enum')})"
            rules.append(_rule(lambda value: value in allowed, rule))
        if "max" in shape.metadata:
            most = shape.metadata["max"]
            rules.append(_rule(lambda value: len(value) <= most,
                               lambda value: f"{len(value)} characters, over {most} ({self.source(shape, 'max')})"))
        if "pattern" in shape.metadata:
            rules.append(self.pattern(shape, shape.metadata["pattern"]))
        return _all_of(rules, str)

    def pattern(self, shape: Shape, pattern: str) -> Check:
        key, rule = (self.service, shape.name), f"does not match {pattern} ({self.source(shape, 'pattern')})"
        try:
            compiled(pattern, ASCII_LIMIT)
        except UntranslatablePattern as error:
            reason = f"{pattern!r} cannot be translated to Python exactly ({error})"

            def unchecked(value: Any, path: str, violations: list[Violation]) -> None:
                UNCHECKED_PATTERNS[key] = reason
            return unchecked

        def check_pattern(value: Any, path: str, violations: list[Violation]) -> None:
            try:
                if not matches(pattern, value):
                    violations.append(Violation(path, value, rule))
            except UntranslatablePattern as error:  # only its non-ASCII variant failed
                UNCHECKED_PATTERNS[key] = f"{pattern!r} for non-ASCII values ({error})"
        return check_pattern

    def sequence(self, shape: Shape) -> Check | None:
        item_check = self.check(shape.member)
        most = shape.metadata.get("max")
        if item_check is None and most is None:
            return None
        source = self.source(shape, "max")

        def check_list(value: Any, path: str, violations: list[Violation]) -> None:
            if not isinstance(value, (list, tuple)):
                return
            if most is not None and len(value) > most:
                violations.append(Violation(path, value, f"{len(value)} items, over {most} ({source})"))
            if item_check is not None:
                for index, item in enumerate(value):
                    if item is not None:
                        item_check(item, f"{path}[{index}]", violations)
        return check_list

    def mapping(self, shape: Shape) -> Check | None:
        key_check, value_check = self.check(shape.key), self.check(shape.value)
        least, most = shape.metadata.get("min"), shape.metadata.get("max")
        if key_check is None and value_check is None and least is None and most is None:
            return None

        def check_map(value: Any, path: str, violations: list[Violation]) -> None:
            if not isinstance(value, dict):
                return
            if most is not None and len(value) > most:
                violations.append(Violation(path, value, f"{len(value)} entries, over {most} ({self.source(shape, 'max')})"))
            if least is not None and len(value) < least:
                violations.append(Violation(path, value, f"{len(value)} entries, under {least} ({self.source(shape, 'min')})"))
            for name, item in value.items():
                if key_check is not None:
                    key_check(name, f"{path} key {name!r}", violations)
                if value_check is not None and item is not None:
                    value_check(item, f"{path}[{name!r}]", violations)
        return check_map

    def number(self, shape: Shape) -> Check | None:
        most = shape.metadata.get("max")
        if most is None:
            return None  # botocore checks the minimum
        return _all_of([_rule(lambda value: value <= most, f"over {most} ({self.source(shape, 'max')})")],
                       (int, float), exclude=bool)

    def blob(self, shape: Shape) -> Check | None:
        least, most = shape.metadata.get("min"), shape.metadata.get("max")
        rules: list[Check] = []
        if most is not None:
            rules.append(_rule(lambda value: _byte_size(value) <= most,
                               lambda value: f"{_byte_size(value)} bytes, over {most} ({self.source(shape, 'max')})"))
        if least is not None:  # botocore checks no blob's size
            rules.append(_rule(lambda value: _byte_size(value) >= least,
                               lambda value: f"{_byte_size(value)} bytes, under {least} ({self.source(shape, 'min')})"))
        return _all_of(rules, (bytes, bytearray, str))


def _byte_size(value: bytes | bytearray | str) -> int:
    return len(value.encode()) if isinstance(value, str) else len(value)


def _rule(holds: Callable[[Any], bool], rule: str | Callable[[Any], str]) -> Check:
    def check_rule(value: Any, path: str, violations: list[Violation]) -> None:
        if not holds(value):
            violations.append(Violation(path, value, rule(value) if callable(rule) else rule))
    return check_rule


def _all_of(rules: list[Check], types: type | tuple[type, ...], exclude: type | None = None) -> Check | None:
    """The rules, applied to values of `types` only (botocore reports a wrong type itself)."""
    if not rules:
        return None

    def check_value(value: Any, path: str, violations: list[Violation]) -> None:
        if isinstance(value, types) and not (exclude is not None and isinstance(value, exclude)):
            for rule in rules:
                rule(value, path, violations)
    return check_value
