"""The AWS CLI commands `gpucloud connect` prints for a person to run, run as the API calls they make:
reading the JupyterLab token the node wrote, and the Session Manager port forwarding, which the
Session Manager plugin resumes and ends (moto has no Session Manager: those calls are answered by a
botocore Stubber). All are measured into access_calls.json."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from access_recording import ran_printed
from gpucloud.connect import Connection
from gpucloud.naming import jupyter_token_parameter_name, notebook_user_policy_name
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


@pytest.mark.access_calls("person:notebookUser", "connect")
def test_the_session_manager_plugin_resumes_and_ends_the_person_s_own_session(aws):
    """The AWS CLI hands the started session to session-manager-plugin, which calls ResumeSession
    after a dropped connection and TerminateSession at the end, with the person's credentials
    (aws/session-manager-plugin sessionhandler.go; the CLI itself terminates it when the plugin is
    missing: aws/aws-cli customizations/sessionmanager.py; read 2026-11-28). Session Manager tags the
    session `aws:ssmmessages:session-id` with the starter's aws:userid and `aws:ssmmessages:target-id`
    with the node (Session Manager user guide, "Additional sample IAM policies for Session Manager",
    Example 3; read 2026-11-28): the recorded calls carry both, and the caller's aws:userid."""
    settings = jupyter_settings()
    group = settings.config.groups[0].name
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "123456789012"},
                                                     "Action": "sts:AssumeRole"}]}
    role = boto3.client("iam").create_role(RoleName=notebook_user_policy_name(settings.name_base, group),
                                           AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    credentials = boto3.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="anna")["Credentials"]
    person = boto3.Session(aws_access_key_id=credentials["AccessKeyId"], aws_secret_access_key=credentials["SecretAccessKey"],
                           aws_session_token=credentials["SessionToken"], region_name=REGION)
    user_id = person.client("sts").get_caller_identity()["UserId"]
    assert user_id == f"{role['RoleId']}:anna"

    argv = Connection("i-0123456789abcdef0", group, 8888, 8888, REGION).command()
    request = {"Target": option(argv, "--target"), "DocumentName": option(argv, "--document-name"),
               "Parameters": json.loads(option(argv, "--parameters"))}
    ssm = person.client("ssm")
    session_id = "anna-0a1b2c3d4e5f67890"
    tags = {"ssm:resourceTag/aws:ssmmessages:session-id": user_id, "ssm:resourceTag/aws:ssmmessages:target-id": request["Target"]}
    with Stubber(ssm) as session_manager:
        session_manager.add_response("start_session", {"SessionId": session_id, "TokenValue": "token", "StreamUrl": "wss://example"},
                                     request)
        session_manager.add_response("resume_session", {"SessionId": session_id, "TokenValue": "token2",
                                                        "StreamUrl": "wss://example"}, {"SessionId": session_id})
        session_manager.add_response("terminate_session", {"SessionId": session_id}, {"SessionId": session_id})
        started = ssm.start_session(**request)["SessionId"]
        for operation, method in (("ResumeSession", ssm.resume_session), ("TerminateSession", ssm.terminate_session)):
            answer = method(SessionId=started)
            ran_printed(settings, "connect", "ssm", operation, {"SessionId": started}, answer,
                        context={"aws:userid": user_id, **tags})

    assert answer["SessionId"] == session_id
