"""The component provider other Pulumi languages use (`pulumi package add`), driven as the Pulumi
CLI drives a plugin: started as a subprocess with the engine's address, it prints its port, then
answers GetSchema and Construct over gRPC; Construct registers the component and its children with
the resource monitor named in the request (here, a recording one). The schema it serves is checked
against the components' own args: every field, its type, whether it is required, its docstring."""

from __future__ import annotations

import ast
import concurrent.futures
import dataclasses
import inspect
import json
import subprocess
import sys
import textwrap

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2

from gpucloud import components
from gpucloud.component_provider import PACKAGE, SERVED
from pulumi.runtime.proto import engine_pb2_grpc, provider_pb2, provider_pb2_grpc, resource_pb2, resource_pb2_grpc
from support import ROOT

PROJECT, STACK = "team-gpus", "dev"


class RecordingMonitor(resource_pb2_grpc.ResourceMonitorServicer):
    """The engine's resource monitor, as far as Construct needs it: every registration is kept."""

    def __init__(self):
        self.registered: list[resource_pb2.RegisterResourceRequest] = []

    def SupportsFeature(self, request, context):
        return resource_pb2.SupportsFeatureResponse(hasSupport=False)

    def RegisterResource(self, request, context):
        self.registered.append(request)
        parent_type = request.parent.split("::")[-2].split("$")[-1] if request.parent else ""
        urn = f"urn:pulumi:{STACK}::{PROJECT}::{parent_type + '$' if parent_type else ''}{request.type}::{request.name}"
        return resource_pb2.RegisterResourceResponse(urn=urn, id="" if not request.custom else f"{request.name}-id",
                                                     object=request.object)

    def RegisterResourceOutputs(self, request, context):
        return empty_pb2.Empty()


class SilentEngine(engine_pb2_grpc.EngineServicer):
    def Log(self, request, context):
        return empty_pb2.Empty()


def serve(add, servicer) -> tuple[grpc.Server, str]:
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
    add(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def provider():
    """The plugin as the CLI starts it (`python -m gpucloud.component_provider <engine>`, the module
    the repository's PulumiPlugin.yaml program runs), and a stub on the port it prints."""
    engine, engine_address = serve(engine_pb2_grpc.add_EngineServicer_to_server, SilentEngine())
    process = subprocess.Popen([sys.executable, "-m", "gpucloud.component_provider", engine_address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield provider_pb2_grpc.ResourceProviderStub(channel)
        channel.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
        engine.stop(None)


@pytest.fixture(scope="module")
def schema(provider) -> dict:
    return json.loads(provider.GetSchema(provider_pb2.GetSchemaRequest()).schema)


def attribute_docstrings(owner: type) -> dict[str, str]:
    """The docstring under each annotated attribute of a class, read from its source."""
    [node] = ast.parse(textwrap.dedent(inspect.getsource(owner))).body
    found = {}
    for before, after in zip(node.body, node.body[1:]):
        if (isinstance(before, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found[before.target.id] = after.value.value
    return found


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def test_the_schema_serves_each_component_under_its_type_token(schema):
    assert schema["name"] == PACKAGE
    assert sorted(schema["resources"]) == sorted(f"gpu-cloud:index:{name}" for name in SERVED)
    assert all(resource["isComponent"] for resource in schema["resources"].values())


@pytest.mark.parametrize("name", SERVED)
def test_each_input_is_an_args_field_with_its_type_requiredness_and_docstring(schema, name):
    resource = schema["resources"][f"gpu-cloud:index:{name}"]
    args = getattr(components, f"{name}Args")
    fields = {camel(field.name): field for field in dataclasses.fields(args)}
    docstrings = attribute_docstrings(args)
    inputs = resource["inputProperties"]

    assert set(inputs) <= set(fields)
    required = {key for key, field in fields.items()
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING}
    assert sorted(resource.get("requiredInputs", [])) == sorted(required)
    for key, served in inputs.items():
        field = fields[key]
        assert served.get("description") == docstrings.get(field.name), f"{name}.{key}"
        kind = {"str": "string", "int": "integer", "bool": "boolean", "float": "number"}.get(
            str(field.type).split("|")[0].strip(), served["type"])
        if "Sequence" in str(field.type):
            kind = "array"
        elif "Mapping" in str(field.type):
            kind = "object"
        assert served["type"] == kind, f"{name}.{key}: {field.type}"
    assert resource.get("description") == getattr(components, name).__doc__.strip()


@pytest.mark.parametrize("name", SERVED)
def test_every_docstring_of_the_args_describes_the_field_above_it(name):
    """A docstring that follows another one describes no field: the schema would lose it."""
    [node] = ast.parse(textwrap.dedent(inspect.getsource(getattr(components, f"{name}Args")))).body
    orphans = [after.value.value for before, after in zip(node.body, node.body[1:])
               if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(before, ast.Expr)]
    assert orphans == []


def test_every_input_and_output_is_described_for_the_other_languages_sdks(schema):
    undescribed = sorted(f"{token.split(':')[-1]}.{key}" for token, resource in schema["resources"].items()
                         for properties in (resource["inputProperties"], resource["properties"])
                         for key, served in properties.items() if not served.get("description"))
    assert undescribed == []


def test_only_what_the_schema_cannot_carry_is_left_out(schema):
    left_out = {name: sorted(camel(field.name) for field in dataclasses.fields(getattr(components, f"{name}Args"))
                             if camel(field.name) not in schema["resources"][f"gpu-cloud:index:{name}"]["inputProperties"])
                for name in SERVED}
    assert {name: keys for name, keys in left_out.items() if keys} == {"EncryptionKey": ["waitsFor"]}


@pytest.mark.parametrize("name", SERVED)
def test_each_output_is_a_component_attribute_with_its_docstring(schema, name):
    outputs = schema["resources"][f"gpu-cloud:index:{name}"]["properties"]
    component = getattr(components, name)
    # A list of resources and a map without types (NodeServices.token_parameter_names) have no schema type.
    annotations = {camel(attribute): attribute for attribute, hint in vars(component).get("__annotations__", {}).items()
                   if "Output[" in str(hint) and "Resource" not in str(hint) and "Output[dict]" not in str(hint)}
    docstrings = attribute_docstrings(component)
    assert set(outputs) == set(annotations)
    for key, served in outputs.items():
        assert served.get("description") == docstrings.get(annotations[key]), f"{name}.{key}"


def test_construct_builds_the_component_and_its_children_with_the_monitor(provider):
    monitor = RecordingMonitor()
    server, address = serve(resource_pb2_grpc.add_ResourceMonitorServicer_to_server, monitor)
    inputs = struct_pb2.Struct()
    inputs.update({"project": "vision", "accountId": "123456789012", "region": "us-east-1",
                   "userRoleNames": ["gpu-cloud-vision-node"], "tags": {"team": "vision"}})
    try:
        response = provider.Construct(provider_pb2.ConstructRequest(
            project=PROJECT, stack=STACK, type="gpu-cloud:index:EncryptionKey", name="vision-key",
            inputs=inputs, monitorEndpoint=address, dryRun=True))
    finally:
        server.stop(None)

    assert response.urn == f"urn:pulumi:{STACK}::{PROJECT}::gpu-cloud:index:EncryptionKey::vision-key"
    [component, *children] = monitor.registered
    assert (component.type, component.name, component.custom) == ("gpu-cloud:index:EncryptionKey", "vision-key", False)
    kinds = {child.type: child for child in children}
    assert {"aws:kms/key:Key", "aws:kms/alias:Alias"} <= set(kinds)
    assert all(child.parent == response.urn for child in children if child.type.startswith("aws:kms"))
    key = dict(kinds["aws:kms/key:Key"].object)
    assert key["enableKeyRotation"] is True and key["tags"]["team"] == "vision"
    assert kinds["aws:kms/alias:Alias"].object["name"] == "alias/gpu-cloud/vision"
    assert {"keyArn", "keyId", "aliasName"} <= set(response.state)


def test_construct_refuses_a_missing_required_input_naming_it(provider):
    monitor = RecordingMonitor()
    server, address = serve(resource_pb2_grpc.add_ResourceMonitorServicer_to_server, monitor)
    inputs = struct_pb2.Struct()
    inputs.update({"project": "vision", "accountId": "123456789012", "userRoleNames": []})
    try:
        with pytest.raises(grpc.RpcError) as error:
            provider.Construct(provider_pb2.ConstructRequest(
                project=PROJECT, stack=STACK, type="gpu-cloud:index:EncryptionKey", name="vision-key",
                inputs=inputs, monitorEndpoint=address, dryRun=True))
    finally:
        server.stop(None)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "region" in error.value.details() + str(error.value.trailing_metadata())
    assert [request.type for request in monitor.registered] == []


def test_the_plugin_manifest_runs_this_module_in_python():
    import yaml

    assert yaml.safe_load((ROOT / "PulumiPlugin.yaml").read_text()) == {"runtime": "python"}
    assert "from gpucloud.component_provider import main" in (ROOT / "__main__.py").read_text()
    requirements = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
                    if line.strip() and not line.startswith("#")]
    assert requirements == ["."]
