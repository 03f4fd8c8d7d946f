"""Amazon Managed Grafana and what the Grafana provider writes into a workspace. moto has neither:
each is checked against the account and the request, then recorded (not validated)."""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, refused, resource
from gpucloud.testing.service_model import check_unsent

GRAFANA_VERSIONS = ("8.4", "9.4", "10.4", "12.4")
"""What CreateWorkspace takes as `grafanaVersion` (Managed Grafana user guide, "Working in Grafana
version 8/9/10/12"; read 2026-11-25)."""
AUTHENTICATION_PROVIDERS = {"AWS_SSO", "SAML"}
AMP_QUERY_URL = re.compile(r"https://aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com/workspaces/(ws-[0-9a-f-]+)/")
RECORDED = "moto has no Managed Grafana: the request was checked against the account and recorded only"


@resource("aws:grafana/workspace:Workspace")
def record_workspace(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    providers = set(inputs.get("authenticationProviders") or [])
    if not providers or providers - AUTHENTICATION_PROVIDERS:
        raise refused("CreateWorkspace", "ValidationException", f"authenticationProviders {sorted(providers)}: AWS_SSO or SAML")
    if inputs.get("grafanaVersion") not in GRAFANA_VERSIONS:
        raise refused("CreateWorkspace", "ValidationException", f"grafanaVersion {inputs.get('grafanaVersion')!r}: one of {GRAFANA_VERSIONS}")
    if inputs.get("permissionType") == "CUSTOMER_MANAGED":
        role_arn = inputs.get("roleArn")
        if not role_arn:
            raise refused("CreateWorkspace", "ValidationException", "a CUSTOMER_MANAGED workspace needs workspaceRoleArn")
        role = account.client("iam").get_role(RoleName=role_arn.rsplit("/", 1)[-1])["Role"]
        trusted = [statement for statement in role["AssumeRolePolicyDocument"]["Statement"]
                   if statement.get("Principal", {}).get("Service") == "grafana.amazonaws.com"]
        if not trusted:
            raise refused("CreateWorkspace", "ValidationException", f"{role_arn} does not trust grafana.amazonaws.com")
    check_unsent(account.client("grafana"), "CreateWorkspace", drop_none({
        "accountAccessType": inputs.get("accountAccessType"), "authenticationProviders": inputs.get("authenticationProviders"),
        "permissionType": inputs.get("permissionType"), "workspaceName": inputs.get("name"),
        "workspaceDescription": inputs.get("description"), "workspaceDataSources": inputs.get("dataSources"),
        "workspaceNotificationDestinations": inputs.get("notificationDestinations"), "workspaceRoleArn": inputs.get("roleArn"),
        "grafanaVersion": inputs.get("grafanaVersion"), "configuration": inputs.get("configuration"),
        "organizationRoleName": inputs.get("organizationRoleName"), "stackSetName": inputs.get("stackSetName"),
        "tags": inputs.get("tags"),
    }))
    workspace_id = "g-" + secrets.token_hex(5)
    return Created(
        id=workspace_id,
        outputs={
            "arn": account.arn("grafana", f"/workspaces/{workspace_id}"),
            "endpoint": f"{workspace_id}.grafana-workspace.{account.region}.amazonaws.com",
            "grafanaVersion": inputs["grafanaVersion"],
        },
        validated=False,
        note=RECORDED,
    )


@resource("aws:grafana/workspaceSamlConfiguration:WorkspaceSamlConfiguration")
def record_saml_configuration(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    if not (inputs.get("idpMetadataUrl") or inputs.get("idpMetadataXml")):
        raise refused("UpdateWorkspaceAuthentication", "ValidationException", "the SAML configuration needs the IdP's metadata")
    for key in ("adminRoleValues", "editorRoleValues"):
        if not inputs.get(key) or not all(1 <= len(value) <= 256 for value in inputs[key]):
            raise refused("UpdateWorkspaceAuthentication", "ValidationException", f"{key}: role values of 1 to 256 characters")
    return Created(id=inputs["workspaceId"], outputs={"status": "CONFIGURED"}, validated=False, note=RECORDED)


@resource("aws:grafana/workspaceServiceAccount:WorkspaceServiceAccount")
def record_service_account(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    if inputs.get("grafanaRole") not in {"ADMIN", "EDITOR", "VIEWER"}:
        raise refused("CreateWorkspaceServiceAccount", "ValidationException", f"grafanaRole {inputs.get('grafanaRole')!r}")
    service_account_id = str(secrets.randbelow(10**6))
    return Created(id=f"{inputs['workspaceId']},{service_account_id}",
                   outputs={"serviceAccountId": service_account_id}, validated=False, note=RECORDED)


@resource("aws:grafana/workspaceServiceAccountToken:WorkspaceServiceAccountToken")
def record_service_account_token(account: Account, request: ResourceRequest) -> Created:
    seconds = request.inputs["secondsToLive"]
    if not 1 <= seconds <= 30 * 24 * 3600:
        raise refused("CreateWorkspaceServiceAccountToken", "ValidationException", f"secondsToLive {seconds}: at most 30 days")
    token_id = str(secrets.randbelow(10**6))
    return Created(id=f"{request.inputs['workspaceId']},{token_id}",
                   outputs={"serviceAccountTokenId": token_id, "key": "glsa_" + secrets.token_hex(16)},
                   validated=False, note=RECORDED)


@resource("grafana:oss/dataSource:DataSource")
def record_data_source(account: Account, request: ResourceRequest) -> Created:
    """The data source must query an AMP workspace of this account and region, signing SigV4."""
    inputs = request.inputs
    found = AMP_QUERY_URL.fullmatch(inputs.get("url", ""))
    if not found or found.group(1) != account.region:
        raise refused("CreateDataSource", "BadRequest", f"{inputs.get('url')!r} is no Prometheus workspace endpoint in {account.region}")
    account.client("amp").describe_workspace(workspaceId=found.group(2))
    settings: dict[str, Any] = json.loads(inputs.get("jsonDataEncoded") or "{}")
    if not settings.get("sigV4Auth") or settings.get("sigV4Region") != account.region:
        raise refused("CreateDataSource", "BadRequest", "an AMP data source must sign with SigV4 in the workspace's region")
    return Created(id=f"1:{inputs.get('uid') or request.name}", outputs={"uid": inputs.get("uid")},
                   validated=False, note=RECORDED)


@resource("grafana:oss/dashboard:Dashboard")
def record_dashboard(account: Account, request: ResourceRequest) -> Created:
    model = json.loads(request.inputs["configJson"])
    if not model.get("uid") or not model.get("title") or len(model["uid"]) > 40:
        raise refused("ImportDashboard", "BadRequest", "a dashboard needs a title and a uid of at most 40 characters")
    return Created(id=f"1:{model['uid']}", outputs={"uid": model["uid"], "dashboardId": 1},
                   validated=False, note=RECORDED)
