"""The AWS CLI commands `gpucloud connect` prints for a person to run, run as the API calls they make:
reading the JupyterLab token the node wrote, and the Session Manager port forwarding (moto has no
StartSession: it is recorded, not answered). Both are measured into access_calls.json."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from access_recording import ran_printed
from gpucloud.connect import Connection
from gpucloud.naming import jupyter_token_parameter_name
from gpucloud.ops.services import token_command
from support import minimal_config, settings_for

REGION = "us-east-1"


def jupyter_settings():
    values = minimal_config()
    values["groups"][0]["services"] = {"jupyter": {}}
    return settings_for(values)


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.fixture
def aws(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


@pytest.mark.access_calls("person:notebookUser", "jupyterToken")
def test_the_printed_token_command_reads_what_the_node_wrote(aws):
    settings = jupyter_settings()
    group = settings.config.groups[0].name
    key = boto3.client("kms").create_key()["KeyMetadata"]["Arn"]
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name=jupyter_token_parameter_name(settings.name_base, group), Value="the-token",
                      Type="SecureString", KeyId=key)
    argv = token_command(settings, group)
    assert argv[1:3] == ["ssm", "get-parameter"] and "--with-decryption" in argv

    request = {"Name": option(argv, "--name"), "WithDecryption": True}
    answer = boto3.client("ssm", region_name=option(argv, "--region")).get_parameter(**request)
    ran_printed(settings, "jupyterToken", "ssm", "GetParameter", request, answer)

    assert answer["Parameter"]["Value"] == "the-token"


@pytest.mark.access_calls("person:notebookUser", "connect")
def test_the_printed_session_command_starts_port_forwarding_on_the_node(aws):
    settings = jupyter_settings()
    argv = Connection("i-0123456789abcdef0", settings.config.groups[0].name, 8888, 8888, REGION).command()
    assert argv[1:3] == ["ssm", "start-session"]

    request = {"Target": option(argv, "--target"), "DocumentName": option(argv, "--document-name"),
               "Parameters": json.loads(option(argv, "--parameters"))}
    ran_printed(settings, "connect", "ssm", "StartSession", request)

    assert request["DocumentName"] == "AWS-StartPortForwardingSession"
