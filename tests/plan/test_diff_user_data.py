"""A launch template's user data in `gpucloud plan --base`: compared as the document it encodes,
so an id AWS handed out inside it (a Prometheus workspace's, in node.json's remote-write URL)
compares by reference like any other, and a reviewer sees the lines that changed."""

from __future__ import annotations

import base64
import io

from rich.console import Console

from gpucloud.plan.diff import diff_plans
from gpucloud.plan.diff_view import render_diff
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource
from gpucloud.userdata.render import encode_user_data, user_data_text

WORKSPACE = "aws:amp/workspace:Workspace"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
GROUP = "aws:autoscaling/group:Group"
KEY = "arn:aws:kms:us-east-1:123456789012:key/0b1e8c44-5c2d-4f57-9f0e-2a86c8e4f1aa"


def resource(kind: str, name: str, id: str, inputs: dict, outputs: dict | None = None) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{kind}::{name}", type=kind, name=name, custom=True, id=id,
                           inputs=inputs, outputs={"id": id, **(outputs or {})})


def cloud_config(workspace: str, cuda: str = "12.4") -> str:
    url = f"https://aps-workspaces.us-east-1.amazonaws.com/workspaces/{workspace}/api/v1/remote_write"
    return (f"#cloud-config\nwrite_files:\n- path: /etc/gpucloud/node.json\n"
            f"  content: '{{\"prometheus_remote_write_url\": \"{url}\", \"cuda\": \"{cuda}\"}}'\n")


def stack(workspace: str, template: str, *, cuda: str = "12.4", key: str = KEY) -> Plan:
    user_data = base64.b64encode(encode_user_data(cloud_config(workspace, cuda))).decode("ascii")
    resources = [
        resource(WORKSPACE, "metrics", workspace, {"kmsKeyArn": key}),
        resource(TEMPLATE, "nodes-lt", template, {"userData": user_data}, {"latestVersion": 1}),
        resource(GROUP, "nodes-asg", "nodes-asg", {
            "launchTemplate": {"id": template, "version": "1"}, "instanceRefresh": {"strategy": "Rolling"}}),
    ]
    return Plan(project="p", stack="s", region="us-east-1", outputs={}, resources=resources)


def test_user_data_reads_back_as_its_document_and_anything_else_as_none():
    document = cloud_config("ws-5f0c2a7e-1d3b-4c7a-8e2f-9b6d4a1c3e5f")

    assert user_data_text(base64.b64encode(encode_user_data(document)).decode("ascii")) == document
    assert user_data_text(base64.b64encode(document.encode()).decode("ascii")) is None  # not gzipped
    assert user_data_text("#cloud-config\n") is None  # not base64
    assert user_data_text(base64.b64encode(encode_user_data("x")[:-4]).decode("ascii")) is None  # cut short


def test_two_fresh_accounts_workspace_ids_inside_the_user_data_are_the_same_workspace():
    """Each plan runs on a fresh account, so the workspace id differs; before, the templates read as
    updated and the group's instance refresh as replacing every node on any llm-infer change."""
    diff = diff_plans(stack("ws-5f0c2a7e-1d3b-4c7a-8e2f-9b6d4a1c3e5f", "lt-0a1b2c3d4e5f60718"),
                      stack("ws-9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b", "lt-0f1e2d3c4b5a69788"))

    assert [change.op for change in diff.changes] == ["same", "same", "same"]
    assert diff.findings == []


def test_a_replaced_workspace_makes_the_user_data_known_after_apply():
    diff = diff_plans(stack("ws-5f0c2a7e-1d3b-4c7a-8e2f-9b6d4a1c3e5f", "lt-0a1b2c3d4e5f60718"),
                      stack("ws-9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b", "lt-0f1e2d3c4b5a69788",
                            key=KEY.replace("0b1e8c44", "7c2d9a10")))

    assert diff.named("metrics").op == "replace"
    assert [(item.path, item.new) for item in diff.named("nodes-lt").changes] == [
        ("userData", "(known after apply: metrics is replaced)")]
    assert diff.named("nodes-asg").op == "update"


def test_a_changed_line_of_the_user_data_is_an_update_that_shows_the_line():
    diff = diff_plans(stack("ws-5f0c2a7e-1d3b-4c7a-8e2f-9b6d4a1c3e5f", "lt-0a1b2c3d4e5f60718"),
                      stack("ws-9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b", "lt-0f1e2d3c4b5a69788", cuda="12.8"))
    console = Console(file=io.StringIO(), width=300, color_system=None)

    render_diff(diff, console)

    assert [item.path for item in diff.named("nodes-lt").changes] == ["userData"]
    shown = console.file.getvalue()
    assert "userData: document changed:" in shown
    assert '-  content: \'{"prometheus_remote_write_url": "https://aps-workspaces.us-east-1.amazonaws.com/' \
           'workspaces/${metrics.id}/api/v1/remote_write", "cuda": "12.4"}\'' in shown
    assert '"cuda": "12.8"}\'' in shown


def test_a_document_with_many_changed_lines_shows_twenty_and_counts_the_rest():
    from gpucloud.plan.diff_view import _text_lines

    old = "".join(f"line {index}\n" for index in range(25))
    new = "".join(f"line {index} changed\n" for index in range(25))

    shown = _text_lines(old, new)

    assert shown[:2] == ["-line 0", "-line 1"] and len(shown) == 21
    assert shown[-1] == "... 30 more changed lines"
    assert _text_lines("one line", "another line") is None  # a plain value keeps its old => new line
