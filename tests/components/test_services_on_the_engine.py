"""A stack whose groups serve JupyterLab, TensorBoard and containers, built on the engine: the token
parameter is a SecureString under the project key holding no token, the hop limit is 2 only where
containers run, and the node role may touch only its own token and the named ECR repositories."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml
from gpucloud.components.node_services import CONTAINERS_TAG, TOKEN_PLACEHOLDER
from gpucloud.testing import moto_account
from gpucloud.userdata.layout import SERVICES_CONFIG_PATH

from support import deploy, minimal_config, settings_for

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v0.6.3"


def services_config() -> dict:
    return minimal_config(groups=[
        {"name": "notebook", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, "spotPercent": 0,
         "persistentVolumeGiB": 100, "services": {"jupyter": {}, "tensorboard": {}}},
        {"name": "serve", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
         "services": {"containers": [{"name": "vllm", "image": IMAGE, "port": 8000, "healthCheck": {"path": "/health"}}]}},
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


def test_the_node_role_touches_only_its_token_and_the_named_repository(stack):
    iam = stack.client("iam")
    document = iam.get_role_policy(RoleName="gpu-cloud-demo-node", PolicyName="gpu-cloud-node-services")["PolicyDocument"]
    statements = {statement["Sid"]: statement for statement in document["Statement"]}
    account_id = stack.account_id
    assert statements["NodeKeepsOwnJupyterToken"]["Resource"] == [
        f"arn:aws:ssm:us-east-1:{account_id}:parameter/gpu-cloud/demo/notebook/jupyter-token"]
    assert statements["PullServiceImagesFromNamedRepositories"]["Resource"] == [
        "arn:aws:ecr:us-east-1:123456789012:repository/team/vllm"]
    assert statements["EcrLoginHasNoResourceLevelPermissions"]["Action"] == "ecr:GetAuthorizationToken"
