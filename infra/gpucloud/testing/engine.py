"""MotoEngine: a `pulumi.runtime.Mocks` that applies each resource to an in-process moto account.

Every resource the program registers is turned into the AWS API calls the provider would make,
through boto3, so botocore validates each call against AWS's API models and moto checks what it
can (a launch template's image, a group's launch template, an alias's key). The engine adds the
reference checks moto skips (a volume's KMS key exists). Resource ids, ARNs and names come back
from moto. A type the engine cannot map raises `UnsupportedResourceError`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from google.protobuf import struct_pb2
from pulumi.runtime import mocks, rpc
from pulumi.runtime.proto import provider_pb2, resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await
from pulumi.runtime.settings import get_project, get_stack

from gpucloud.testing import handlers  # noqa: F401  (registers the handlers)
from gpucloud.testing import provider_rules
from gpucloud.testing.input_coverage import TrackedInputs, unchecked
from gpucloud.testing.service_model import ServiceModelViolation, names_what_it_applies
from gpucloud.testing.registry import (
    INVOKES,
    RESOURCES,
    UPDATES,
    Account,
    Created,
    ResourceRequest,
    UnsupportedResourceError,
    whole_numbers,
)


ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass
class AppliedResource:
    """One resource as the engine saw and applied it."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None = None
    id: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool | None = None
    """The `deleteBeforeReplace` resource option: True or False where the program set it (either
    overrides the provider's choice), None where the provider decides."""
    dependencies: tuple[str, ...] = ()
    validated: bool = True
    note: str = ""
    operation: str = "create"
    """create, update (inputs changed since the previous deployment) or same (nothing sent to AWS)."""
    provider_violations: tuple[provider_rules.RuleViolation, ...] = ()
    """What the bridged provider's own input rules refuse (`testing/provider_rules.py`)."""
    unchecked_inputs: tuple[str, ...] = ()
    """Input properties the handler never passed to AWS and no cited provider rule checks."""

    @property
    def state(self) -> dict[str, Any]:
        """Inputs overlaid with what AWS returned, as `pulumi preview --json` shows outputs."""
        return {**self.inputs, **self.outputs}


class MotoEngine(mocks.Mocks):
    """Applies resources and answers invokes on the moto account `account` (moto must be active)."""

    def __init__(
        self,
        account: Account,
        *,
        record_unknown_types: bool = False,
        previous: Mapping[str, AppliedResource] | None = None,
    ):
        self.account = account
        self.record_unknown_types = record_unknown_types
        """Record a resource type with no handler as not validated instead of failing the run."""
        self.previous = dict(previous or {})
        """An earlier deployment's resources by URN: this run updates them, as `pulumi up` on a stack does."""
        self.resources: dict[str, AppliedResource] = {}
        self._lock = threading.RLock()
        self._registering = threading.local()

    @names_what_it_applies
    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict]:
        with self._lock:
            record = self.resources.get(getattr(self._registering, "urn", None) or "")
            if not args.custom:
                return None, {}
            if args.typ.startswith("pulumi:providers:"):
                outputs: dict[str, Any] = dict(args.inputs)
                physical_id = f"{args.name}-provider"
            else:
                request = ResourceRequest(args.typ, args.name, whole_numbers(dict(args.inputs)))
                violations = provider_rules.check(args.typ, args.name, request.inputs)
                request.inputs = TrackedInputs(request.inputs)
                earlier = self.previous.get(record.urn) if record else None
                with provider_rules.refused_first(violations):
                    if earlier is not None:
                        created = self._update(earlier, request, record)
                    else:
                        handler = RESOURCES.get(args.typ)
                        if handler is None and not self.record_unknown_types:
                            raise UnsupportedResourceError("resource type", args.typ)
                        created = (handler or _record_only)(self.account, request)
                outputs = {**args.inputs, **created.outputs}
                physical_id = created.id
                if record:
                    record.validated, record.note = created.validated, created.note
                    record.provider_violations = tuple(violations)
                    record.unchecked_inputs = (
                        earlier.unchecked_inputs if earlier and record.operation == "same" else unchecked(args.typ, request.inputs)
                    )
            if record:
                record.id = physical_id
                record.inputs = whole_numbers(dict(args.inputs))
                record.outputs = whole_numbers(
                    {key: value for key, value in outputs.items() if args.inputs.get(key) != value}
                )
            return physical_id, outputs

    def _update(self, earlier: AppliedResource, request: ResourceRequest, record: AppliedResource) -> Created:
        """The same resource in a later run: nothing to do when its inputs (less those it ignores)
        are unchanged, else its type's update handler runs, as the provider's Update would."""
        def compared(inputs: Mapping[str, Any]) -> dict[str, Any]:
            return {key: value for key, value in dict.items(inputs) if key not in record.ignore_changes}

        kept = Created(id=earlier.id or "", outputs=dict(earlier.outputs), validated=earlier.validated, note=earlier.note)
        if compared(request.inputs) == compared(earlier.inputs):
            record.operation = "same"
            return kept
        update = UPDATES.get(request.type)
        if update is None:
            raise UnsupportedResourceError("update of resource type", request.type)
        record.operation = "update"
        return update(self.account, request, earlier.id or "")

    def call(self, args: mocks.MockCallArgs) -> dict | tuple[dict, list[tuple[str, str]]]:
        """Answer a data source; a lookup AWS would fail comes back as the invoke's failure."""
        handler = INVOKES.get(args.token)
        if handler is None:
            raise UnsupportedResourceError("invoke", args.token)
        with self._lock:
            try:
                return handler(self.account, whole_numbers(dict(args.args)))
            except (ClientError, LookupError, ServiceModelViolation) as error:
                return {}, [("", f"{args.token}: {error}")]

    def register(self, record: AppliedResource) -> None:
        """Called by the monitor, on the thread that then calls `new_resource` for this URN."""
        with self._lock:
            self.resources[record.urn] = record
        self._registering.urn = record.urn


def _record_only(account: Account, request: ResourceRequest) -> Created:
    """What an unknown type gets when the run was told to record such types: nothing is sent to
    AWS, nothing about it is checked, and the plan says so."""
    return Created(
        id=f"{request.name}-unvalidated",
        validated=False,
        note=f"the engine has no handler for {request.type}: recorded as declared, nothing checked",
    )


class RecordingMonitor(mocks.MockMonitor):
    """The SDK's mock monitor, keeping what `Mocks` does not see: parents and resource options."""

    def __init__(self, engine: MotoEngine):
        super().__init__(engine)
        self.engine = engine

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the Pulumi engine gives (`resource.NewURN`): the type is prefixed with the
        parent's whole qualified type, except under the root stack. The SDK's mock keeps only the
        parent's last type and keeps the stack, so its URNs match no real preview or `--target`."""
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != ROOT_STACK_TYPE:
                type_ = f"{parent_type}${type_}"
        return "urn:pulumi:" + "::".join([get_stack(), get_project(), type_, name])

    def RegisterResource(self, request):  # noqa: N802 - gRPC method name
        self.engine._registering.urn = None
        if request.type != ROOT_STACK_TYPE:
            urn = self.make_urn(request.parent, request.type, request.name)
            self.engine.register(
                AppliedResource(
                    urn=urn,
                    type=request.type,
                    name=request.name,
                    custom=bool(request.custom),
                    parent=request.parent or None,
                    protect=bool(request.protect),
                    retain_on_delete=bool(request.retainOnDelete),
                    ignore_changes=tuple(request.ignoreChanges),
                    replace_on_changes=tuple(request.replaceOnChanges),
                    delete_before_replace=bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None,
                    dependencies=tuple(request.dependencies),
                )
            )
            return self._register(request, urn)
        return super().RegisterResource(request)

    def _register(self, request, urn: str):
        """`MockMonitor.RegisterResource` for a resource, answering with only what the engine
        changed or added: the SDK takes every other output from the inputs it sent (`rpc.resolve_outputs`
        when not a dry run), so sending the inputs back would serialize them again for nothing."""
        _ensure_event_loop()
        inputs = rpc.deserialize_properties(request.object)
        args = mocks.MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=inputs,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom or False,
            transforms=mocks._resolve_callbacks(request.transforms),
        )
        resource_id, state = self.mocks.new_resource(args)
        self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, resource_id, state)
        changed = {key: value for key, value in state.items() if key not in inputs or inputs[key] != value}
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=_struct(changed))

    def Invoke(self, request):  # noqa: N802 - gRPC method name
        """`MockMonitor.Invoke`, with the answer built by `_struct`: the runtime calls this inline on its
        event loop (`testing.account._InlineExecutor`), where the SDK serializer's `_sync_await` would
        have to pump that loop from inside one of its own tasks."""
        if request.tok == "pulumi:pulumi:getResource":
            return super().Invoke(request)
        _ensure_event_loop()
        args = mocks.MockCallArgs(token=request.tok, args=rpc.deserialize_properties(request.args), provider=request.provider)
        answer = self.mocks.call(args)
        result, failures = (answer, None) if isinstance(answer, dict) else (
            answer[0], [provider_pb2.CheckFailure(property=name, reason=reason) for name, reason in answer[1]]
        )
        return resource_pb2.ResourceInvokeResponse(failures=failures, **{"return": _struct(result)})


_SCALARS = (str, bool, int, float, type(None))


def _plain(value: Any) -> bool:
    """JSON data: what the engine's handlers answer with. A secret, asset or resource reference
    arrives from `deserialize_properties` as such data (a dict with Pulumi's signature key), and the
    SDK serializes it as it serializes any dict."""
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return False


def _struct(properties: Mapping[str, Any]) -> struct_pb2.Struct:
    """What `rpc.serialize_properties(properties, {})` makes, built directly where the values are plain
    JSON data (top-level nulls are left out, as the SDK leaves them out). Anything else (a Python
    object a handler should not have answered with) goes through the SDK, which says what it cannot
    serialize."""
    if not _plain(dict(properties)):
        return _sync_await(rpc.serialize_properties(properties, {}))
    struct = struct_pb2.Struct()
    for key, value in properties.items():
        if value is not None:
            struct[key] = value
    return struct
