"""What IAM sees of a call (gpucloud.testing.iam_actions), and how a test's concrete names become the
placeholders of access_calls.json (tests/access_recording.py)."""

from __future__ import annotations

import pytest

from access_placeholders import placeholders, values_of
from access_recording import Request, entries
from gpucloud.node.config import NodeConfig
from gpucloud.testing.iam_actions import UnknownOperationError, deployer_calls, iam_calls


def test_listing_objects_is_list_bucket_on_the_bucket_with_the_prefix_as_context():
    [call] = iam_calls("s3", "ListObjectsV2", {"Bucket": "b", "Prefix": "runs/"})
    assert (call.action, call.resource, dict(call.context)) == ("s3:ListBucket", "arn:${partition}:s3:::b", {"s3:prefix": "runs/"})


def test_a_head_request_is_get_object_and_a_listing_without_prefix_reads_no_prefix_key():
    assert [call.action for call in iam_calls("s3", "HeadObject", {"Bucket": "b", "Key": "k"})] == ["s3:GetObject"]
    assert dict(iam_calls("s3", "ListObjectsV2", {"Bucket": "b"})[0].context) == {}


def test_send_command_is_authorized_on_the_document_and_each_instance():
    calls = iam_calls("ssm", "SendCommand", {"DocumentName": "d", "InstanceIds": ["i-1", "i-2"]})
    assert [call.resource.rsplit(":", 1)[-1] for call in calls] == ["document/d", "instance/i-1", "instance/i-2"]


def test_a_secure_string_is_encrypted_by_kms_through_parameter_store_with_its_arn_as_context():
    put = iam_calls("ssm", "PutParameter", {"Name": "/a/b", "Type": "SecureString", "KeyId": "k"})
    plain = iam_calls("ssm", "PutParameter", {"Name": "/a/b", "Type": "String"})
    assert [call.action for call in put] == ["ssm:PutParameter", "kms:Encrypt"]
    assert dict(put[1].context) == {"kms:ViaService": "ssm.${region}.amazonaws.com", "kms:CallerAccount": "${account}",
                                    "kms:EncryptionContext:PARAMETER_ARN": "arn:${partition}:ssm:${region}:${account}:parameter/a/b"}
    assert put[1].via == "ssm" and [call.action for call in plain] == ["ssm:PutParameter"]


def test_reading_a_secure_string_decrypts_only_with_decryption_asked():
    answer = {"Parameter": {"Type": "SecureString"}}
    assert [call.action for call in iam_calls("ssm", "GetParameter", {"Name": "p", "WithDecryption": True}, answer)] == [
        "ssm:GetParameter", "kms:Decrypt"]
    assert [call.action for call in iam_calls("ssm", "GetParameter", {"Name": "p"}, answer)] == ["ssm:GetParameter"]


def test_an_sse_kms_object_read_decrypts_through_s3_under_the_bucket_arn_with_a_bucket_key():
    answer = {"ServerSideEncryption": "aws:kms", "BucketKeyEnabled": True}
    [_, kms] = iam_calls("s3", "GetObject", {"Bucket": "b", "Key": "k"}, answer)
    assert kms.action == "kms:Decrypt" and kms.context["kms:EncryptionContext:aws:s3:arn"] == "arn:${partition}:s3:::b"
    [_, kms] = iam_calls("s3", "PutObject", {"Bucket": "b", "Key": "k", "ServerSideEncryption": "aws:kms"})
    assert kms.action == "kms:GenerateDataKey" and kms.context["kms:EncryptionContext:aws:s3:arn"] == "arn:${partition}:s3:::b/k"


def test_attaching_an_encrypted_volume_makes_a_grant_for_an_aws_resource_through_ec2():
    calls = iam_calls("ec2", "AttachVolume", {"InstanceId": "i-1", "VolumeId": "vol-1"}, encrypted_volume=lambda volume: True)
    assert [call.action for call in calls] == ["ec2:AttachVolume", "ec2:AttachVolume", "kms:CreateGrant"]
    assert calls[2].context["kms:GrantIsForAWSResource"] == "true"


def test_set_instance_health_is_authorized_on_the_nodes_own_group():
    [call] = iam_calls("autoscaling", "SetInstanceHealth", {"InstanceId": "i-1", "HealthStatus": "Unhealthy"})
    assert call.resource.endswith(":autoScalingGroupName/gpu-cloud-${nameBase}-${group}")


def test_an_operation_the_table_lacks_is_named_not_dropped():
    with pytest.raises(UnknownOperationError, match="ssm DeleteParameter"):
        iam_calls("ssm", "DeleteParameter", {"Name": "p"})


def test_the_deployer_passes_the_backup_role_to_backup_and_encrypts_volumes_through_ec2():
    [passed] = deployer_calls("backup", "CreateBackupSelection", {"BackupSelection": {"IamRoleArn": "arn:aws:iam::1:role/r"}})
    assert (passed.feature, passed.call.action, dict(passed.call.context)) == (
        "backup", "iam:PassRole", {"iam:PassedToService": "backup.amazonaws.com"})
    volume = deployer_calls("ec2", "CreateVolume", {"KmsKeyId": "k", "Size": 1})
    assert [found.call.action for found in volume] == ["kms:DescribeKey", "kms:GenerateDataKeyWithoutPlaintext"]
    assert deployer_calls("ec2", "CreateVolume", {"Size": 1}) == []


def test_a_node_configs_names_become_the_stacks_placeholders():
    values = values_of(NodeConfig(group_name="ml-train-gpu", checkpoint_bucket="ml-artifacts", checkpoint_prefix="ml/train"))
    text = "arn:aws:s3:::ml-artifacts/ml/train/checkpoints/ml-train-gpu/i-0abc12345678/latest 123456789012"
    assert placeholders(text, values) == (
        "arn:${partition}:s3:::${dataBucket}/${writePrefix}checkpoints/gpu-cloud-${nameBase}-${group}/${instanceId}/latest ${account}")


def test_a_job_folder_key_is_under_the_write_prefix_and_the_job_whatever_the_test_called_them():
    request = Request("s3", "PutObject", {"Bucket": "b", "Key": "runs/jobs/j-1/b.json"}, values={"b": "${dataBucket}"})
    [entry] = entries("person:jobRunner", "run", "t", [request], through_vpc=False)
    assert entry["resource"] == "arn:${partition}:s3:::${dataBucket}/${writePrefix}jobs/${job}/b.json"
    assert entry["endpoint"] is None


def test_the_job_supervisor_s_state_machine_and_event_target_pass_their_roles_to_their_services():
    """CreateStateMachine passes its roleArn to Step Functions, PutTargets each target's RoleArn to
    EventBridge: the deployer's iam:PassRole (issue 37)."""
    machine = deployer_calls("states", "CreateStateMachine", {"name": "m", "definition": "{}", "roleArn": "arn:r/jobs"})
    target = deployer_calls("events", "PutTargets", {"Rule": "r", "Targets": [
        {"Id": "a", "Arn": "arn:m", "RoleArn": "arn:r/events"}, {"Id": "b", "Arn": "arn:topic"}]})
    assert [(found.feature, found.call.action, found.call.resource, dict(found.call.context)) for found in machine + target] == [
        ("jobSupervisor", "iam:PassRole", "arn:r/jobs", {"iam:PassedToService": "states.amazonaws.com"}),
        ("jobSupervisor", "iam:PassRole", "arn:r/events", {"iam:PassedToService": "events.amazonaws.com"})]
