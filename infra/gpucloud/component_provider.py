"""The components for Pulumi programs in any language: a source-based component provider.

`pulumi package add <repository>@<version>` runs this provider (the repository's `PulumiPlugin.yaml`,
`runtime: python`, and its `__main__.py`), asks it for its schema and generates an SDK in the
program's language; `new gpucloud.EncryptionKey(...)` in TypeScript then reaches `Construct` here,
which builds the Python component. Pulumi's Python SDK infers the schema from type annotations
(`pulumi.provider.experimental`): the args as a TypedDict, the outputs as class annotations, the
descriptions from attribute docstrings. The components' args stay frozen dataclasses for Python
users; each served component gets a TypedDict twin of its args and a subclass that takes the twin
and builds the dataclass, both derived from the component's own annotations and docstrings.

Served: the components whose args are plain values (strings, numbers, lists, maps, inputs). Those
built from resolved stack config (ProjectEnvironment, GpuInstanceGroup, InferenceEndpoint,
GpuAutoscaling, GrafanaWorkspace, AgentArtifacts) are Python-only.
"""

import dataclasses
import inspect
import types
import typing
from collections import abc

import pulumi

PACKAGE = "gpu-cloud"
"""The package of the components' type tokens (`gpu-cloud:index:<Name>`): the provider's name."""

SERVED = ("CostBudget", "EncryptedVolume", "EncryptionKey", "GpuMonitoring", "GpuNetwork", "GpuSecurityGroup",
          "NodeServices", "PrometheusWorkspace", "S3PrefixAccess", "VolumeBackup")

_PLAIN = (str, int, float, bool)
_T = typing.TypeVar("_T")


def _hints(owner: type) -> dict[str, typing.Any]:
    """`owner`'s own annotations as types (the modules use `from __future__ import annotations`;
    `pulumi.Input[...]` refers to `Output[T]` by name)."""
    own = type(owner.__name__, (), {"__annotations__": inspect.get_annotations(owner), "__module__": owner.__module__})
    return typing.get_type_hints(own, localns={"Output": pulumi.Output, "T": _T})


def _servable(hint: typing.Any) -> bool:
    """Whether the schema can carry the type: plain values, inputs and outputs of them, lists, maps."""
    if hint in _PLAIN or hint is type(None):
        return True
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, abc.Sequence, dict, abc.Mapping, pulumi.Output):
        return all(_servable(argument) for argument in arguments)
    if origin in (typing.Union, types.UnionType):
        plain = [a for a in arguments if typing.get_origin(a) is not abc.Awaitable and not isinstance(a, typing.ForwardRef)
                 and typing.get_origin(a) is not pulumi.Output]
        return all(_servable(argument) for argument in plain)
    return False


def _optional(field: dataclasses.Field) -> bool:
    return field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING


def args_type(args: type) -> type:
    """The TypedDict twin of a dataclass of args: the fields the schema can carry, required where
    the dataclass has no default. It takes the dataclass's module and name, so the SDK reads the
    attribute docstrings from the dataclass's source."""
    hints = _hints(args)
    fields = {}
    for field in dataclasses.fields(args):
        if not _servable(hints[field.name]):
            if not _optional(field):
                raise TypeError(f"{args.__name__}.{field.name}: {hints[field.name]} has no schema type")
            continue
        fields[field.name] = typing.NotRequired[hints[field.name]] if _optional(field) else hints[field.name]
    twin = typing.TypedDict(args.__name__, fields)  # type: ignore[operator]
    twin.__module__, twin.__qualname__, twin.__doc__ = args.__module__, args.__qualname__, args.__doc__
    return twin


def served_component(component: type[pulumi.ComponentResource], args_class: type) -> type[pulumi.ComponentResource]:
    """A subclass of `component` whose constructor takes the TypedDict twin of `args_class` (what the
    provider's Construct passes: a dict of the inputs by their Python names) and builds the
    dataclass. It keeps the component's module, name and docstring, so the SDK reads the outputs'
    docstrings from the component's source.

    The SDK reads the outputs from the annotations of every class in the subclass's MRO, as types:
    the component's own annotations (strings, under `from __future__ import annotations`) are set to
    the types they name, those the schema can carry only (a list of routes is internal). Only the
    provider's process, which imports the package to serve it, sees that change."""
    twin = args_type(args_class)

    def __init__(self, name: str, args: dict, opts: typing.Optional[pulumi.ResourceOptions] = None) -> None:
        component.__init__(self, name, args_class(**args), opts)

    __init__.__annotations__ = {"name": str, "args": twin, "opts": typing.Optional[pulumi.ResourceOptions],
                                "return": None}
    component.__annotations__ = {key: hint for key, hint in _hints(component).items()
                                 if not key.startswith("_") and _servable(hint)}
    served = type(component.__name__, (component,), {"__init__": __init__, "__annotations__": {},
                                                      "__doc__": component.__doc__})
    served.__module__, served.__qualname__ = component.__module__, component.__qualname__
    return served


def served_components() -> list[type[pulumi.ComponentResource]]:
    """Every served component, as the provider hosts it."""
    import gpucloud.components as components

    return [served_component(getattr(components, name), getattr(components, f"{name}Args")) for name in SERVED]


def main() -> None:
    """Host the provider: Pulumi starts it with the engine's address, it prints its port and serves
    GetSchema and Construct over gRPC until the engine is done."""
    import gpucloud
    from pulumi.provider.experimental import component_provider_host

    # A source tree never installed has no version ("0+unknown"): the SDK then says 0.0.0.
    version = None if "+unknown" in gpucloud.__version__ else gpucloud.__version__
    component_provider_host(served_components(), PACKAGE, version=version)


if __name__ == "__main__":
    main()
