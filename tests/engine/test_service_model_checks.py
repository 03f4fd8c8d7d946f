"""Every call the engine makes is checked against AWS's own service model (enums, patterns,
maximums) before moto sees it: what the botocore client lets through and AWS refuses."""

from __future__ import annotations

import json

import botocore.session
import pulumi_aws as aws
import pytest

from gpucloud.cli import PLAN_VIOLATIONS, main
from gpucloud.testing import run_program, service_model
from gpucloud.testing.model_patterns import matches
from gpucloud.testing.service_model import ServiceModelViolation, Violation, check_params

AUTOSCALING_ACCELERATORS = "a100, v100, k80, t4, m60, radeon-pro-v520, vu9p"


@pytest.fixture(scope="module")
def models():
    session = botocore.session.get_session()
    return lambda service, operation: session.get_service_model(service).operation_model(operation)


def group_with_requirements(**requirements):
    override = {"InstanceRequirements": {"VCpuCount": {"Min": 1}, "MemoryMiB": {"Min": 1}, **requirements}}
    return {
        "AutoScalingGroupName": "gpus", "MinSize": 0, "MaxSize": 1,
        "MixedInstancesPolicy": {"LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "gpus"}, "Overrides": [override]}},
    }


def test_an_accelerator_name_outside_auto_scalings_enum_is_refused_with_its_path(models):
    violations = check_params(models("autoscaling", "CreateAutoScalingGroup"),
                              group_with_requirements(AcceleratorNames=["a100", "h100"]))

    assert violations == [Violation(
        "MixedInstancesPolicy.LaunchTemplate.Overrides[0].InstanceRequirements.AcceleratorNames[1]", "h100",
        f"not one of {AUTOSCALING_ACCELERATORS} (botocore autoscaling 2011-01-01 AcceleratorName enum)",
    )]


def test_the_same_name_is_taken_where_ec2s_model_lists_it(models):
    params = {"LaunchTemplateName": "gpus", "LaunchTemplateData": {"InstanceRequirements": {
        "VCpuCount": {"Min": 1}, "MemoryMiB": {"Min": 1}, "AcceleratorNames": ["h100"]}}}
    assert check_params(models("ec2", "CreateLaunchTemplate"), params) == []


def test_a_role_name_is_held_to_iams_pattern_and_length(models):
    create_role = models("iam", "CreateRole")
    policy = "{}"

    assert check_params(create_role, {"RoleName": "gpu-cloud_vision+train=a,b.c@d", "AssumeRolePolicyDocument": policy}) == []
    [spaced] = check_params(create_role, {"RoleName": "my role", "AssumeRolePolicyDocument": policy})
    [long] = check_params(create_role, {"RoleName": "r" * 65, "AssumeRolePolicyDocument": policy})

    assert (spaced.path, spaced.rule) == ("RoleName", r"does not match [\w+=,.@-]+ (botocore iam 2010-05-08 roleNameType pattern)")
    assert (long.path, long.rule) == ("RoleName", "65 characters, over 64 (botocore iam 2010-05-08 roleNameType max)")


def test_list_sizes_and_numbers_are_held_to_their_maximums(models):
    too_many = group_with_requirements(AllowedInstanceTypes=[f"g{index}.xlarge" for index in range(401)])
    healthy = {"AutoScalingGroupName": "gpus", "MinSize": 0, "MaxSize": 1,
               "InstanceMaintenancePolicy": {"MinHealthyPercentage": 150, "MaxHealthyPercentage": 200}}

    [items] = check_params(models("autoscaling", "CreateAutoScalingGroup"), too_many)
    [percent] = check_params(models("autoscaling", "CreateAutoScalingGroup"), healthy)

    assert items.path.endswith("InstanceRequirements.AllowedInstanceTypes")
    assert items.rule == "401 items, over 400 (botocore autoscaling 2011-01-01 AllowedInstanceTypes max)"
    assert (percent.path, percent.value) == ("InstanceMaintenancePolicy.MinHealthyPercentage", 150)
    assert percent.rule == "over 100 (botocore autoscaling 2011-01-01 IntPercentResettable max)"


def test_maps_and_blobs_are_held_to_their_sizes(models):
    tags = {f"key-{index}": "value" for index in range(51)}
    [map_size] = check_params(models("amp", "CreateWorkspace"), {"alias": "w", "tags": tags})
    [blob_size] = check_params(models("kms", "Encrypt"), {"KeyId": "alias/k", "Plaintext": b"x" * 4097})

    assert (map_size.path, map_size.rule) == ("tags", "51 entries, over 50 (botocore amp 2020-08-01 TagMap max)")
    assert (blob_size.path, blob_size.rule) == ("Plaintext", "4097 bytes, over 4096 (botocore kms 2014-11-01 PlaintextType max)")


def test_java_patterns_mean_what_aws_means():
    tag_value = r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*"
    xml_string = "[\\u0020-\\uD7FF\\uE000-\\uFFFD\\uD800\\uDC00-\\uDBFF\\uDFFF\\r\\n\\t]*"
    budgets_address = r"^(?![^:\\]*/action/|(?i).*<script>.*</script>.*)[^:\\]+$"

    assert matches(tag_value, "équipe vision:2") and not matches(tag_value, "a#b") and not matches(tag_value, "a\tb")
    assert matches(xml_string, "GPU nodes 🚀") and not matches(xml_string, "bell\x07")
    assert matches(budgets_address, "ops@example.com") and not matches(budgets_address, "x<SCRIPT>y</script>")
    assert matches(r"[\w-_]+", "a-b_c") and not matches(r"[\w-_]+", "a.b")
    assert not matches(r"[\w+=,.@-]+", "rôle"), "Java's \\w is ASCII only"


def test_a_pattern_that_cannot_be_translated_is_recorded_not_guessed(models):
    service_model.UNCHECKED_PATTERNS.pop(("dlm", "TagValue"), None)
    params = {"ExecutionRoleArn": "arn:aws:iam::123456789012:role/dlm", "Description": "d", "State": "ENABLED",
              "Tags": {"team": "anything at all"}}

    assert check_params(models("dlm", "CreateLifecyclePolicy"), params) == []
    assert "cannot be translated" in service_model.UNCHECKED_PATTERNS[("dlm", "TagValue")]


@pytest.fixture
def exceptions_table(tmp_path, monkeypatch):
    """A reviewed table of our own in place of the package's; compiled checks are rebuilt around it."""
    table = tmp_path / "aws_model_exceptions.json"
    monkeypatch.setattr(service_model, "EXCEPTIONS_PATH", table)
    service_model.forget_compiled_checks()
    yield table
    monkeypatch.undo()
    service_model.forget_compiled_checks()


def test_a_value_in_the_reviewed_table_passes_beyond_a_stale_enum(models, exceptions_table):
    exceptions_table.write_text(json.dumps({"accepted": [
        {"service": "autoscaling", "shape": "AcceleratorName", "values": ["h100"], "evidence": []}], "reviewed": []}))

    assert check_params(models("autoscaling", "CreateAutoScalingGroup"), group_with_requirements(AcceleratorNames=["h100"])) == []
    [still] = check_params(models("autoscaling", "CreateAutoScalingGroup"), group_with_requirements(AcceleratorNames=["l4"]))
    assert still.value == "l4"


def test_every_entry_of_the_reviewed_table_names_a_model_enum_and_its_evidence():
    table = json.loads(service_model.EXCEPTIONS_PATH.read_text())
    session = botocore.session.get_session()
    for entry in table["accepted"] + table["reviewed"]:
        enum = session.get_service_model(entry["service"]).shape_for(entry["shape"]).enum
        assert enum, f"{entry['service']} {entry['shape']} is no enum"
        assert not set(entry["values"]) & set(enum), f"{entry['shape']}: values the model already lists"
        assert entry["evidence"] and all(item["source"] and item["read"] for item in entry["evidence"]), entry["shape"]


def gpu_group_program(image_id: str, accelerator: str):
    def program():
        vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
        subnet = aws.ec2.Subnet("subnet", vpc_id=vpc.id, cidr_block="10.0.1.0/24", availability_zone="us-east-1a")
        template = aws.ec2.LaunchTemplate("gpus", image_id=image_id)
        aws.autoscaling.Group("gpus", min_size=0, max_size=1, vpc_zone_identifiers=[subnet.id], mixed_instances_policy={
            "launch_template": {
                "launch_template_specification": {"launch_template_id": template.id, "version": "$Latest"},
                "overrides": [{"instance_requirements": {
                    "vcpu_count": {"min": 8}, "memory_mib": {"min": 32768}, "accelerator_names": [accelerator]}}],
            },
        })
    return program


def test_a_program_declaring_a_value_aws_refuses_fails_naming_resource_property_value_and_rule(account):
    image_id = account.client("ec2").describe_images(Owners=["amazon"])["Images"][0]["ImageId"]

    with pytest.raises(ServiceModelViolation) as refused:
        run_program(gpu_group_program(image_id, "h100"), account)

    assert str(refused.value) == (
        'AWS would refuse autoscaling CreateAutoScalingGroup for aws:autoscaling/group:Group "gpus": '
        "MixedInstancesPolicy.LaunchTemplate.Overrides[0].InstanceRequirements.AcceleratorNames[0] = 'h100': "
        f"not one of {AUTOSCALING_ACCELERATORS} (botocore autoscaling 2011-01-01 AcceleratorName enum)"
    )
    assert account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []


def test_gpucloud_plan_says_what_aws_would_refuse_in_one_line(tmp_path, capsys):
    program = tmp_path / "__main__.py"
    program.write_text('import pulumi_aws as aws\n'
                       'aws.iam.Role("runner", name="ci runner", assume_role_policy="{}")\n')

    assert main(["plan", "--program", str(program)]) == PLAN_VIOLATIONS
    assert capsys.readouterr().err == (
        f"error: program {program}: AWS would refuse iam CreateRole for aws:iam/role:Role \"runner\": "
        "RoleName = 'ci runner': does not match [\\w+=,.@-]+ (botocore iam 2010-05-08 roleNameType pattern)\n"
    )


def test_an_invoke_whose_call_aws_would_refuse_fails_as_that_data_source(account):
    with pytest.raises(Exception, match=r"invoke of aws:iam/getRole:getRole failed: aws:iam/getRole:getRole: "
                                        r"AWS would refuse iam GetRole: RoleName = 'ci runner': does not match"):
        run_program(lambda: aws.iam.get_role(name="ci runner"), account)


def test_a_type_moto_lacks_is_checked_against_the_model_before_it_is_recorded(account):
    with pytest.raises(ServiceModelViolation) as refused:
        run_program(lambda: aws.ec2.PlacementGroup("nodes", strategy="clustered"), account)

    [violation] = refused.value.violations
    assert (refused.value.applying, violation.path, violation.value) == (
        'aws:ec2/placementGroup:PlacementGroup "nodes"', "Strategy", "clustered")
    assert violation.rule.startswith("not one of cluster, spread, partition")
