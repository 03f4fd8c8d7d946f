"""The review gate in the offline plan: every policy trips on a resource built on the engine,
the example stacks pass them all, and a deliberately bad program fails naming each policy."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest

from gpucloud.cli import main
from gpucloud.plan import plan_program, plan_program_file, plan_stack
from gpucloud.config import load_stack_file
from gpucloud.policy import RULES, PolicyConfig
from support import EXAMPLE_STACKS, ROOT, STACKS

TAGS = {"Project": "p", "Owner": "o@example.com", "CostCenter": "cc"}
BAD_PROGRAM = ROOT / "tests/programs/bad_program.py"


def violated(plan) -> set[str]:
    return {violation.policy_name for violation in plan.policy_violations}


def encrypted_template(**extra):
    key = aws.kms.Key("key", enable_key_rotation=True, tags=TAGS)
    ami = aws.ec2.get_ami(most_recent=True, owners=["amazon"], filters=[{"name": "architecture", "values": ["x86_64"]}])
    options = {
        "image_id": ami.id,
        "metadata_options": {"http_tokens": "required", "http_put_response_hop_limit": 1},
        "block_device_mappings": [
            {"device_name": ami.root_device_name, "ebs": {"encrypted": "true", "kms_key_id": key.arn, "volume_size": 50}}
        ],
        "tags": TAGS,
    }
    options.update(extra)
    return aws.ec2.LaunchTemplate("template", **options)


def gpu_group(template, **extra):
    options = {
        "min_size": 0,
        "max_size": 4,
        "availability_zones": ["us-east-1a"],
        "mixed_instances_policy": {
            "launch_template": {
                "launch_template_specification": {"launch_template_id": template.id, "version": "$Latest"},
                "overrides": [{"instance_type": "g5.xlarge"}],
            },
            "instances_distribution": {"on_demand_percentage_above_base_capacity": 0},
        },
        "capacity_rebalance": True,
        "tags": [{"key": k, "value": v, "propagate_at_launch": False} for k, v in TAGS.items()],
    }
    options.update(extra)
    return aws.autoscaling.Group("gpus", **options)


VIOLATIONS = {
    "kms-rotation-and-deletion-window": lambda: aws.kms.Key("key", enable_key_rotation=False, deletion_window_in_days=7, tags=TAGS),
    "required-tags": lambda: aws.kms.Key("key", enable_key_rotation=True, tags={"Project": "p"}),
    "imdsv2-required": lambda: encrypted_template(metadata_options={"http_tokens": "optional"}),
    "no-public-ip": lambda: encrypted_template(network_interfaces=[{"device_index": 0, "associate_public_ip_address": "true"}]),
    "ebs-encrypted-with-cmk": lambda: aws.ebs.Volume("data", availability_zone="us-east-1a", size=10, encrypted=True, tags=TAGS),
    "no-world-open-ingress": lambda: aws.ec2.SecurityGroup(
        "open", ingress=[{"protocol": "tcp", "from_port": 8888, "to_port": 8888, "ipv6_cidr_blocks": ["::/0"]}], tags=TAGS
    ),
    "iam-least-privilege": lambda: aws.iam.Policy(
        "s3-everything",
        policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::data/*"}]}),
        tags=TAGS,
    ),
    "asg-bounded-and-rebalanced": lambda: gpu_group(encrypted_template(), max_size=64, capacity_rebalance=False),
    "gpu-group-has-scale-in-path": lambda: gpu_group(encrypted_template()),
    "data-volume-retained": lambda: aws.ebs.Volume(
        "data", availability_zone="us-east-1a", size=10, encrypted=True, kms_key_id=aws.kms.Key("key", enable_key_rotation=True, tags=TAGS).arn, tags=TAGS
    ),
}


def test_every_policy_has_an_offline_violation_case():
    assert set(VIOLATIONS) == {rule.name for rule in RULES}


@pytest.mark.parametrize("policy", sorted(VIOLATIONS))
def test_policy_trips_on_resources_built_on_the_engine(policy):
    plan = plan_program(VIOLATIONS[policy])
    assert policy in violated(plan)
    mandatory = next(rule for rule in RULES if rule.name == policy).enforcement_level == "mandatory"
    assert plan.failed is mandatory or any(v.mandatory for v in plan.policy_violations if v.policy_name != policy)


def test_group_cap_comes_from_the_policy_config():
    program = lambda: gpu_group(encrypted_template(), max_size=24, capacity_rebalance=True)  # noqa: E731
    assert "asg-bounded-and-rebalanced" in violated(plan_program(program))
    assert "asg-bounded-and-rebalanced" not in violated(plan_program(program, policy_config=PolicyConfig(max_group_size=32)))


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_example_stacks_pass_every_policy(stack):
    plan = plan_stack(load_stack_file(STACKS / f"Pulumi.{stack}.yaml"))
    assert [vars(v) for v in plan.policy_violations] == []
    assert not plan.failed


def test_bad_program_fails_naming_each_violated_policy():
    plan = plan_program_file(BAD_PROGRAM)
    assert plan.failed
    by_resource = {(v.urn.rsplit("::", 1)[-1], v.policy_name) for v in plan.policy_violations if v.mandatory}
    assert {
        ("world-open-ssh", "no-world-open-ingress"),
        ("unencrypted-data", "ebs-encrypted-with-cmk"),
        ("admin-everything", "iam-least-privilege"),
        ("imdsv1-nodes", "imdsv2-required"),
    } <= by_resource


def test_cli_plans_a_program_file_and_exits_1(capsys):
    assert main(["plan", "--program", str(BAD_PROGRAM), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    names = {violation["policyName"] for violation in document["policyViolations"]}
    assert {"no-world-open-ingress", "ebs-encrypted-with-cmk", "iam-least-privilege", "imdsv2-required"} <= names
    assert all({"policyName", "enforcementLevel", "urn", "message"} == set(v) for v in document["policyViolations"])


def test_cli_prints_violations_under_the_tree(capsys):
    assert main(["plan", "--program", str(BAD_PROGRAM)]) == 1
    out = capsys.readouterr().out
    tree, violations = out.split("Policy Violations:")
    assert "world-open-ssh" in tree
    assert "[mandatory]  no-world-open-ingress  (aws:ec2/securityGroup:SecurityGroup: world-open-ssh)" in violations
    assert "urn:pulumi:dev::gpu-cloud::aws:ec2/securityGroup:SecurityGroup::world-open-ssh" in violations


def test_missing_program_file_exits_2(capsys):
    assert main(["plan", "--program", "no/such/program.py"]) == 2
    assert "no such Pulumi program file" in capsys.readouterr().err
