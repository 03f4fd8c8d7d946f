"""A stack whose groups serve JupyterLab, TensorBoard and containers, built on the engine: the token
parameter is a SecureString under the project key holding no token, the hop limit is 2 only where
containers run, and the node role may touch only its own token and the named ECR repositories."""

from __future__ import annotations

import base64
import fnmatch
import gzip
import json

import pytest
import yaml
from gpucloud.components.node_services import CONTAINERS_TAG, TOKEN_PLACEHOLDER
from gpucloud.config.node_endpoints import measured_calls
from gpucloud.testing import moto_account
from gpucloud.userdata.layout import SERVICES_CONFIG_PATH

from support import deploy, minimal_config, settings_for

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v0.6.3"


def services_config() -> dict:
    return minimal_config(groups=[
        {"name": "notebook", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, "spotPercent": 0,
         "persistentVolumeGiB": 100, "services": {"jupyter": {}, "tensorboard": {}}},
        {"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
         "services": {"containers": [{"name": "vllm", "image": IMAGE, "port": 8000, "healthCheck": {"path": "/health"},
                                      "secretEnv": {"HF_TOKEN": "ssm:/team/hf-token"}}]}},
    ])


@pytest.fixture(scope="module")
def stack():
    settings = settings_for(services_config())
    with moto_account(settings.region) as account:
        deploy(settings, account)
        yield account


def templates_by_group(account) -> dict[str, dict]:
    ec2 = account.client("ec2")
    found = {}
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        [version] = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"])["LaunchTemplateVersions"]
        tags = {tag["Key"]: tag["Value"] for tag in template.get("Tags", [])}
        found[tags["GpuGroup"]] = {"data": version["LaunchTemplateData"], "tags": tags}
    return found


def test_the_token_parameter_is_a_securestring_under_the_project_key_holding_no_token(stack):
    ssm = stack.client("ssm")
    name = "/gpu-cloud/demo/notebook/jupyter-token"
    [described] = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])["Parameters"]
    [alias] = [alias for alias in stack.client("kms").list_aliases()["Aliases"] if alias["AliasName"] == "alias/gpu-cloud/demo"]
    key_arn = stack.client("kms").describe_key(KeyId=alias["TargetKeyId"])["KeyMetadata"]["Arn"]
    assert described["Type"] == "SecureString" and described["Tier"] == "Standard"
    assert described["KeyId"] == key_arn
    assert ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"] == TOKEN_PLACEHOLDER
    names = [parameter["Name"] for parameter in ssm.describe_parameters()["Parameters"]
             if parameter["Name"].startswith("/gpu-cloud/")]
    assert names == [name], "only a JupyterLab group gets a token parameter"


def test_the_hop_limit_is_two_only_where_containers_run(stack):
    templates = templates_by_group(stack)
    limits = {group: template["data"]["MetadataOptions"]["HttpPutResponseHopLimit"] for group, template in templates.items()}
    assert limits == {"notebook": 1, "serve": 2}
    assert all(template["data"]["MetadataOptions"]["HttpTokens"] == "required" for template in templates.values())
    assert {group for group, template in templates.items() if template["tags"].get(CONTAINERS_TAG) == "true"} == {"serve"}


def test_the_services_file_says_what_each_group_serves_and_holds_no_token(stack):
    carried = {}
    for group, template in templates_by_group(stack).items():
        document = yaml.safe_load(gzip.decompress(base64.b64decode(template["data"]["UserData"])))
        files = {entry["path"]: entry["content"] for entry in document["write_files"]}
        carried[group] = json.loads(files[SERVICES_CONFIG_PATH]) if SERVICES_CONFIG_PATH in files else None
    assert carried["notebook"]["jupyter"]["root_dir"] == "/persist/home"
    assert carried["notebook"]["tensorboard"]["log_dir"] == "s3://demo-data/runs/"
    assert carried["notebook"]["jupyter"]["token_parameter"] == "/gpu-cloud/demo/notebook/jupyter-token"
    assert TOKEN_PLACEHOLDER not in json.dumps(carried["notebook"]), "the user data names the parameter, holds no token"
    assert carried["serve"]["containers"][0]["ecr_region"] == "us-east-1"
    assert carried["serve"]["containers"][0]["secret_env"] == {"HF_TOKEN": "ssm:/team/hf-token"}, "the name, no value"


def test_the_node_role_touches_only_its_token_and_the_named_repository(stack):
    iam = stack.client("iam")
    document = iam.get_role_policy(RoleName="gpu-cloud-demo-node", PolicyName="gpu-cloud-node-services")["PolicyDocument"]
    statements = {statement["Sid"]: statement for statement in document["Statement"]}
    account_id = stack.account_id
    assert statements["NodeKeepsOwnJupyterToken"]["Resource"] == [
        f"arn:aws:ssm:us-east-1:{account_id}:parameter/gpu-cloud/demo/notebook/jupyter-token"]
    token_calls = {f"ssm:{operation}" for calls in measured_calls()["jupyterToken"].values() for operation in calls["ssm"]}
    assert sorted(token_calls) == statements["NodeKeepsOwnJupyterToken"]["Action"], "what the node calls, no more"
    assert statements["PullServiceImagesFromNamedRepositories"]["Resource"] == [
        "arn:aws:ecr:us-east-1:123456789012:repository/team/vllm"]
    assert statements["EcrLoginHasNoResourceLevelPermissions"]["Action"] == "ecr:GetAuthorizationToken"
    assert statements["ContainersReadNamedParameters"]["Resource"] == [
        f"arn:aws:ssm:us-east-1:{account_id}:parameter/team/hf-token"]
    secret_calls = {f"ssm:{operation}" for calls in measured_calls()["containerSecrets"].values()
                    for operation in calls.get("ssm", ())}
    assert [statements["ContainersReadNamedParameters"]["Action"]] == sorted(secret_calls), "what the node calls, no more"
    assert "ContainersReadNamedSecrets" not in statements, "no secretsmanager reference, no grant"


def listed(value) -> list:
    return value if isinstance(value, list) else [value]


def key_policy_allows(policy: dict, action: str, context: dict[str, str]) -> bool:
    """Whether an Allow of the key policy to the account (`Principal` its root) covers a request of
    an account principal with this request context; every condition must match, a key missing from
    the context fails it (IAM user guide, "Condition operators"). The policy uses no Deny."""
    for statement in listed(policy["Statement"]):
        if not str(statement["Principal"].get("AWS", "")).endswith(":root"):
            continue
        if not any(fnmatch.fnmatchcase(action, pattern) for pattern in listed(statement["Action"])):
            continue
        conditions = statement.get("Condition", {})
        if all(key in context and any(fnmatch.fnmatchcase(context[key], value) if operator in ("ArnLike", "StringLike")
                                      else context[key] == value for value in listed(values))
               for operator, keys in conditions.items() for key, values in keys.items()):
            return True
    return False


def test_the_deployer_and_a_person_may_use_the_key_through_parameter_store_for_the_token_only(stack):
    """Parameter Store calls kms:Encrypt (PutParameter: `pulumi up`) and kms:Decrypt (GetParameter
    with decryption: the provider's read after create, and the command `gpucloud connect` prints)
    with the caller's credentials, through ssm.<region>, with the parameter's ARN as encryption
    context (KMS developer guide, "How AWS Systems Manager Parameter Store uses AWS KMS")."""
    kms = stack.client("kms")
    [alias] = [alias for alias in kms.list_aliases()["Aliases"] if alias["AliasName"] == "alias/gpu-cloud/demo"]
    policy = json.loads(kms.get_key_policy(KeyId=alias["TargetKeyId"], PolicyName="default")["Policy"])
    token = f"arn:aws:ssm:us-east-1:{stack.account_id}:parameter/gpu-cloud/demo/notebook/jupyter-token"
    through_ssm = {"kms:CallerAccount": stack.account_id, "kms:ViaService": "ssm.us-east-1.amazonaws.com",
                   "kms:EncryptionContext:PARAMETER_ARN": token, "aws:PrincipalArn": f"arn:aws:iam::{stack.account_id}:role/deployer"}

    assert key_policy_allows(policy, "kms:Encrypt", through_ssm), "pulumi up cannot create the SecureString"
    assert key_policy_allows(policy, "kms:Decrypt", through_ssm), "nobody can read the token"
    other_parameter = {**through_ssm, "kms:EncryptionContext:PARAMETER_ARN": token.replace("notebook", "other")}
    assert not key_policy_allows(policy, "kms:Decrypt", other_parameter)
    assert not key_policy_allows(policy, "kms:Decrypt", {**through_ssm, "kms:ViaService": "ssm.us-west-2.amazonaws.com"})
    assert not key_policy_allows(policy, "kms:Decrypt", {**through_ssm, "kms:CallerAccount": "999988887777"})
    assert not key_policy_allows(policy, "kms:Decrypt", {key: value for key, value in through_ssm.items()
                                                        if key != "kms:ViaService"}), "directly, not through ssm"


def test_notebooks_without_a_volume_live_in_the_home_of_the_images_login_user():
    from gpucloud.components.node_services import node_services_document

    config = settings_for(minimal_config(groups=[
        {"name": "bare", "instanceTypes": ["g5.xlarge"], "maxSize": 1, "services": {"jupyter": {}}}])).config
    document = node_services_document(config, config.groups[0], "demo", "us-east-1")
    assert document["jupyter"]["root_dir"] is None, "the node picks ubuntu's or ec2-user's home (node/services.py)"
