"""The plan a reviewer reads at any terminal width, and each group's on-demand/spot split in it.

One engine run (a module-scoped plan of a small stack that leaves spotPercent at its default),
rendered at the widths a terminal, a CI log and the README use."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from gpucloud.config import load_stack_file
from gpucloud.plan import plan_stack
from gpucloud.plan.tree_columns import cut_middle, short_type
from gpucloud.plan.view import SUMMARIES, render

STACK = """config:
  aws:region: us-east-1
  gpu-cloud:project: spotty
  gpu-cloud:owner: a@example.com
  gpu-cloud:costCenter: cc
  gpu-cloud:budget: {monthlyUsd: 100000}
  gpu-cloud:account: {createServiceLinkedRole: true}
  gpu-cloud:groups:
    - name: trainers
      instanceTypes: [g5.xlarge, g6.xlarge]
      minSize: 0
      desiredCapacity: 3
      maxSize: 6
      onDemandBaseCapacity: 1
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("stack") / "Pulumi.spotty.yaml"
    path.write_text(STACK)
    return plan_stack(load_stack_file(path))


def rendered(plan, width: int) -> str:
    out = io.StringIO()
    render(plan, Console(file=out, width=width, soft_wrap=False, color_system=None))
    return out.getvalue()


def tree_rows(text: str) -> list[str]:
    tree = text.split("\n\nOutputs:")[0].split("\n")
    return [line for line in tree if line.startswith("+ ")]


@pytest.mark.parametrize("width", [100, 120, 160, 300])
def test_every_row_keeps_its_marker_operation_and_info_within_the_width(plan, width):
    text = rendered(plan, width)
    rows = tree_rows(text)
    header = next(line for line in text.splitlines() if line.lstrip().startswith("Type"))

    assert len(rows) == len(plan.resources) + 1
    assert all(re.search(r"\s+create(\s|$)", row) for row in rows), "each row reads `create` in full"
    assert all(len(line) <= width for line in text.split("\n\nOutputs:")[0].splitlines())
    assert "Plan" in header and "Info" in header
    # The launch template's metadata setting is the summary a reviewer looks for first.
    template = next(row for row in rows if ":LaunchTemplate" in row and "-lt " in row.replace("…", " "))
    assert "IMDSv2" in template
    group = next(row for row in rows if "autoscaling:Group" in row or "autoscaling/group:Group" in row)
    assert "g5.xlarge" in group


def test_full_type_tokens_where_they_fit_and_short_ones_at_160_columns(plan):
    assert any("aws:autoscaling/group:Group" in row for row in tree_rows(rendered(plan, 300)))
    narrow = tree_rows(rendered(plan, 160))
    assert not any("aws:autoscaling/group:Group" in row for row in narrow)
    assert any("aws:autoscaling:Group" in row for row in narrow)


def test_short_type_drops_the_module_file_and_names_keep_both_ends():
    assert short_type("aws:s3/bucketPolicy:BucketPolicy") == "aws:s3:BucketPolicy"
    assert short_type("gpu-cloud:index:GpuInstanceGroup") == "gpu-cloud:index:GpuInstanceGroup"
    assert short_type("pulumi:pulumi:Stack") == "pulumi:pulumi:Stack"
    assert cut_middle("spotty-network-private-us-east-1a", 15) == "spotty-…east-1a"
    assert cut_middle("short", 15) == "short"


def test_the_default_spot_percent_is_stated_with_the_split_per_group(plan):
    [option] = plan.to_preview_json()["purchaseOptions"]
    assert option == {
        "group": "trainers", "spotPercent": 100, "spotPercentSource": "default", "onDemandBaseCapacity": 1,
        "desired": {"capacity": 3, "onDemand": 1, "spot": 2}, "max": {"capacity": 6, "onDemand": 1, "spot": 5},
    }
    for width in (100, 300):
        assert ("trainers: spot 100% above an on-demand base of 1 (spotPercent: default); "
                "desired 3 = 1 on-demand + 2 spot; max 6 = 1 on-demand + 5 spot") in rendered(plan, width)


def test_a_rule_names_its_direction_port_range_and_peer_group():
    ingress = SUMMARIES["aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"]
    egress = SUMMARIES["aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"]
    lustre = {"ipProtocol": "tcp", "fromPort": 1018, "toPort": 1023, "securityGroupId": "sg-nodes",
              "referencedSecurityGroupId": "sg-file-servers", "description": "Lustre TCP 1018-1023 to the servers"}
    assert ingress(lustre) == "tcp 1018-1023 from security group sg-file-servers"
    assert egress({**lustre, "referencedSecurityGroupId": "sg-nodes"}) == "tcp 1018-1023 to members of this group"
    assert ingress({"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": "10.0.0.0/8"}) == "tcp 22 from 10.0.0.0/8"


def test_a_target_tracking_policy_names_its_metric_customized_or_predefined():
    policy = SUMMARIES["aws:autoscaling/policy:Policy"]
    endpoint = {"policyType": "TargetTrackingScaling", "targetTrackingConfiguration": {
        "predefinedMetricSpecification": {"predefinedMetricType": "ALBRequestCountPerTarget",
                                          "resourceLabel": "app/lb/1/targetgroup/tg/2"}, "targetValue": 20}}
    backlog = {"policyType": "TargetTrackingScaling", "targetTrackingConfiguration": {
        "customizedMetricSpecification": {"metricName": "Backlog", "namespace": "Jobs"}, "targetValue": 100}}
    assert policy(endpoint) == "target tracking ALBRequestCountPerTarget at 20"
    assert policy(backlog) == "target tracking Backlog at 100"
