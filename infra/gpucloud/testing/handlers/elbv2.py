"""Application Load Balancers, target groups, listeners, and their attachment to an Auto Scaling group.

moto keeps ELBv2 state; the engine adds what Elastic Load Balancing refuses and moto takes, each
cited (read 2026-11-25), and what the provider's CustomizeDiff refuses on a listener before any AWS
call (internal/service/elbv2/listener.go at the commit data/provider_rules.json names, read 2026-11-27).
"""

from __future__ import annotations

from typing import Any

from gpucloud.testing.external_seed import seed_certificate
from gpucloud.testing.provider_rules import ProviderRulesBroken, RuleViolation, source_of
from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource


def _arn_suffix(arn: str) -> str:
    """What the provider's `arn_suffix` holds: `app/<name>/<id>` of a load balancer (its ARN's
    resource less `loadbalancer/`), `targetgroup/<name>/<id>` of a target group."""
    resource_part = arn.split(":", 5)[5]
    return resource_part.removeprefix("loadbalancer/")


def _check_two_zones(account: Account, name: str, subnet_ids: list[str]) -> None:
    """"You must specify subnets from at least two Availability Zones" for an Application Load
    Balancer (Elastic Load Balancing user guide, "Application Load Balancers", Availability Zones);
    moto takes one."""
    subnets = account.client("ec2").describe_subnets(SubnetIds=subnet_ids)["Subnets"] if subnet_ids else []
    if len({subnet["AvailabilityZone"] for subnet in subnets}) < 2:
        raise refused("CreateLoadBalancer", "ValidationError",
                      f"{name}: At least two subnets in two different Availability Zones must be specified")


LOAD_BALANCER_FREE_ADDRESSES = 8
"""Each subnet of a load balancer needs "at least eight free IP addresses" (Elastic Load Balancing
user guide, "Application Load Balancers", Subnets, read 2026-11-25); moto takes a full one."""


def _check_free_addresses(account: Account, name: str, subnet_ids: list[str]) -> None:
    if not subnet_ids:
        return
    for subnet in account.client("ec2").describe_subnets(SubnetIds=subnet_ids)["Subnets"]:
        if subnet["AvailableIpAddressCount"] < LOAD_BALANCER_FREE_ADDRESSES:
            raise refused("CreateLoadBalancer", "InvalidSubnet",
                          f"{name}: Not enough IP space available in {subnet['SubnetId']}. ELB requires at least "
                          f"{LOAD_BALANCER_FREE_ADDRESSES} free IP addresses in each subnet.")


def _routes_to_internet_gateway(ec2: Any, subnet: dict[str, Any]) -> bool:
    """Whether the subnet's route table (its own association, else the VPC's main table) sends
    0.0.0.0/0 to an internet gateway: what makes a subnet public (VPC user guide, "Subnets for your
    VPC", subnet types, read 2026-11-25)."""
    tables = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet["SubnetId"]]}])[
        "RouteTables"] or ec2.describe_route_tables(Filters=[
            {"Name": "vpc-id", "Values": [subnet["VpcId"]]}, {"Name": "association.main", "Values": ["true"]}])["RouteTables"]
    return any(route.get("DestinationCidrBlock") == "0.0.0.0/0" and str(route.get("GatewayId", "")).startswith("igw-")
               for table in tables for route in table["Routes"])


def _check_internet_facing(account: Account, name: str, subnet_ids: list[str]) -> None:
    """AWS refuses an internet-facing load balancer in a VPC with no internet gateway attached
    (InvalidSubnet, "VPC ... has no internet gateway"; Elastic Load Balancing user guide,
    "Application Load Balancers": an internet-facing load balancer needs public subnets, read
    2026-11-25). It takes one in a private subnet of a VPC that has a gateway, and that load
    balancer answers nobody in the zone: the engine refuses that too, as gpu-cloud's own rule
    (the message says so), since the stack meant it to be reachable."""
    ec2 = account.client("ec2")
    subnets = ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"] if subnet_ids else []
    for vpc_id in sorted({subnet["VpcId"] for subnet in subnets}):
        if not ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])["InternetGateways"]:
            raise refused("CreateLoadBalancer", "InvalidSubnet", f"{name}: VPC {vpc_id} has no internet gateway")
    private = sorted(subnet["SubnetId"] for subnet in subnets if not _routes_to_internet_gateway(ec2, subnet))
    if private:
        raise refused("CreateLoadBalancer", "InvalidSubnet",
                      f"{name}: internet-facing, but {', '.join(private)} route no 0.0.0.0/0 to an internet gateway "
                      "(gpu-cloud engine rule: AWS creates it, and it is unreachable from the internet in that zone)")


@resource("aws:lb/loadBalancer:LoadBalancer")
def create_load_balancer(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    kind = inputs.get("loadBalancerType", "application")
    subnets = list(inputs.get("subnets") or [])
    if kind == "application":
        _check_two_zones(account, name, subnets)
    _check_free_addresses(account, name, subnets)
    elbv2 = account.client("elbv2")
    # The provider sends scheme internal only when `internal` is true; otherwise AWS makes it internet-facing.
    internal = bool(inputs.get("internal"))
    if not internal:
        _check_internet_facing(account, name, subnets)
    balancer = elbv2.create_load_balancer(**drop_none({
        "Name": name,
        "Subnets": subnets,
        "SecurityGroups": list(inputs.get("securityGroups") or []),
        "Scheme": "internal" if internal else "internet-facing",
        "Type": kind,
        "IpAddressType": inputs.get("ipAddressType"),
        "Tags": aws_tags(inputs.get("tags")),
    }))["LoadBalancers"][0]
    arn = balancer["LoadBalancerArn"]
    logs = inputs.get("accessLogs") or {}
    attributes = drop_none({
        "idle_timeout.timeout_seconds": inputs.get("idleTimeout"),
        "routing.http.drop_invalid_header_fields.enabled": inputs.get("dropInvalidHeaderFields"),
        "access_logs.s3.enabled": logs.get("enabled"),
        "access_logs.s3.bucket": logs.get("bucket"),
        "access_logs.s3.prefix": logs.get("prefix"),
    })
    if attributes.get("access_logs.s3.enabled"):
        _check_log_bucket(account, name, attributes["access_logs.s3.bucket"])
    if attributes:
        elbv2.modify_load_balancer_attributes(LoadBalancerArn=arn, Attributes=[
            {"Key": key, "Value": str(value).lower() if isinstance(value, bool) else str(value)}
            for key, value in attributes.items()
        ])
    return Created(id=arn, outputs={
        "arn": arn, "arnSuffix": _arn_suffix(arn), "name": name, "dnsName": balancer["DNSName"],
        "zoneId": balancer.get("CanonicalHostedZoneId"), "vpcId": balancer.get("VpcId"), "internal": internal,
    })


def _check_log_bucket(account: Account, name: str, bucket: str) -> None:
    """Access logs need a bucket in the load balancer's region whose default encryption is SSE-S3:
    "The only server-side encryption option that's supported is Amazon S3-managed keys (SSE-S3)"
    (Elastic Load Balancing user guide, "Enable access logs for your Application Load Balancer").
    AWS checks by writing a test object, which moto's account cannot show; the engine reads the
    bucket's encryption instead."""
    s3 = account.client("s3")
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except Exception as error:  # NoSuchBucket, or no encryption configuration
        raise refused("ModifyLoadBalancerAttributes", "InvalidConfigurationRequest",
                      f"{name}: Access Denied for bucket: {bucket} ({error})") from None
    algorithms = {rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in rules}
    if algorithms != {"AES256"}:
        raise refused("ModifyLoadBalancerAttributes", "InvalidConfigurationRequest",
                      f"{name}: access log bucket {bucket} is encrypted with {', '.join(sorted(algorithms))}; "
                      "Elastic Load Balancing delivers only to SSE-S3 (AES256) buckets")


@resource("aws:lb/targetGroup:TargetGroup")
def create_target_group(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    check = inputs.get("healthCheck") or {}
    interval, timeout = check.get("interval"), check.get("timeout")
    if interval is not None and timeout is not None and timeout >= interval:
        # "The timeout must be smaller than the interval" (Elastic Load Balancing user guide,
        # "Health checks for Application Load Balancer target groups"); moto takes it.
        raise refused("CreateTargetGroup", "ValidationError",
                      f"{name}: Health check timeout '{timeout}' must be smaller than the interval '{interval}'")
    elbv2 = account.client("elbv2")
    group = elbv2.create_target_group(**drop_none({
        "Name": name,
        "Protocol": inputs.get("protocol"),
        "Port": inputs.get("port"),
        "VpcId": inputs.get("vpcId"),
        "TargetType": inputs.get("targetType"),
        "HealthCheckEnabled": check.get("enabled"),
        "HealthCheckPath": check.get("path"),
        "HealthCheckPort": check.get("port"),
        "HealthCheckProtocol": check.get("protocol"),
        "HealthCheckIntervalSeconds": interval,
        "HealthCheckTimeoutSeconds": timeout,
        "HealthyThresholdCount": check.get("healthyThreshold"),
        "UnhealthyThresholdCount": check.get("unhealthyThreshold"),
        "Matcher": {"HttpCode": check["matcher"]} if check.get("matcher") else None,
        "Tags": aws_tags(inputs.get("tags")),
    }))["TargetGroups"][0]
    arn = group["TargetGroupArn"]
    attributes = drop_none({
        "deregistration_delay.timeout_seconds": inputs.get("deregistrationDelay"),
        "slow_start.duration_seconds": inputs.get("slowStart"),
    })
    if attributes:
        elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
            {"Key": key, "Value": str(value)} for key, value in attributes.items()
        ])
    return Created(id=arn, outputs={"arn": arn, "arnSuffix": _arn_suffix(arn), "name": name})


def _actions(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [drop_none({"Type": action["type"], "TargetGroupArn": action.get("targetGroupArn"), "Order": action.get("order")})
            for action in actions]


LISTENER = "aws:lb/listener:Listener"
ACTION_BLOCKS = {
    "redirect": "redirect",
    "fixed-response": "fixedResponse",
    "authenticate-cognito": "authenticateCognito",
    "authenticate-oidc": "authenticateOidc",
    "jwt-validation": "jwtValidation",
}
"""The block each non-forward action type needs (listenerActionPlantimeValidate)."""
MUTUAL_AUTHENTICATION_VERIFY_ONLY = ("trustStoreArn", "advertiseTrustStoreCaNames", "ignoreClientCertificateExpiry")


def _listener_customize_diff(request: ResourceRequest) -> None:
    """The provider's CustomizeDiff refusals (validateListenerActionsCustomDiff and
    validateMutualAuthenticationCustomDiff): `pulumi preview` fails on them. Like the provider, the
    action type is compared as written, and a block set for another type is left alone (the provider
    only warns of it at apply)."""
    inputs = request.inputs
    source = source_of(LISTENER)
    found: list[RuleViolation] = []

    def refuse(path: str, rule: str) -> None:
        found.append(RuleViolation(LISTENER, request.name, path, None, f"CustomizeDiff: {rule}", source))

    for index, action in enumerate(inputs.get("defaultActions") or []):
        at = f"defaultActions[{index}]"
        kind = action.get("type")
        arn = action.get("targetGroupArn")
        forward = action.get("forward")
        groups = (forward or {}).get("targetGroups") or []
        if arn and any(group.get("arn") and group.get("arn") != arn for group in groups):
            refuse(at, "target_group_arn and forward target groups may both be set only if the ARNs match")
        if kind == "forward" and arn is None and forward is None:
            refuse(f"{at}.type", "either target_group_arn or forward must be specified when type is forward")
        block = ACTION_BLOCKS.get(kind or "")
        if block and action.get(block) is None:
            refuse(f"{at}.{block}", f"required when type is {kind}")
    mutual = inputs.get("mutualAuthentication")
    if mutual and mutual.get("mode") is not None:
        mode = mutual["mode"]
        if mode == "verify" and mutual.get("trustStoreArn") is None:
            refuse("mutualAuthentication.trustStoreArn", "required when mode is verify")
        if mode != "verify":
            for key in MUTUAL_AUTHENTICATION_VERIFY_ONLY:
                if mutual.get(key) is not None:
                    refuse(f"mutualAuthentication.{key}", f"cannot be set when mode is {mode}")
    if found:
        raise ProviderRulesBroken(found)


@resource(LISTENER)
def create_listener(account: Account, request: ResourceRequest) -> Created:
    _listener_customize_diff(request)
    inputs = request.inputs
    protocol = inputs.get("protocol") or "HTTP"
    certificate = inputs.get("certificateArn")
    if protocol == "HTTPS" and not certificate:
        # CreateListener `Certificates`: "[HTTPS and TLS listeners] The default certificate for the
        # listener. You must provide exactly one certificate" (botocore elbv2 model 2015-12-01).
        raise refused("CreateListener", "ValidationError", f"{request.name}: A certificate must be specified for HTTPS listeners")
    if certificate and not account.certificates_known:
        # No account fact lists the certificates: assumed to exist (the plan says it did not check them).
        seed_certificate(account, certificate)
    listener = account.client("elbv2").create_listener(**drop_none({
        "LoadBalancerArn": inputs["loadBalancerArn"],
        "Protocol": protocol,
        "Port": inputs.get("port"),
        "SslPolicy": inputs.get("sslPolicy"),
        "Certificates": [{"CertificateArn": certificate}] if certificate else None,
        "DefaultActions": _actions(inputs.get("defaultActions") or []),
        "Tags": aws_tags(inputs.get("tags")),
    }))["Listeners"][0]
    return Created(id=listener["ListenerArn"], outputs={"arn": listener["ListenerArn"]})


@resource("aws:autoscaling/attachment:Attachment")
def attach_target_group(account: Account, request: ResourceRequest) -> Created:
    """AttachLoadBalancerTargetGroups, as the provider's `aws_autoscaling_attachment` does for
    `lb_target_group_arn` (internal/service/autoscaling/attachment.go)."""
    inputs = request.inputs
    group = inputs["autoscalingGroupName"]
    autoscaling = account.client("autoscaling")
    if inputs.get("elb"):
        autoscaling.attach_load_balancers(AutoScalingGroupName=group, LoadBalancerNames=[inputs["elb"]])
        return Created(id=f"{group}-{request.name}")
    target_group = inputs["lbTargetGroupArn"]
    account.client("elbv2").describe_target_groups(TargetGroupArns=[target_group])  # TargetGroupNotFound as AWS
    autoscaling.attach_load_balancer_target_groups(AutoScalingGroupName=group, TargetGroupARNs=[target_group])
    return Created(id=f"{group}-{request.name}")
