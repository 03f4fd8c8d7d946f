"""InferenceEndpoint: an Application Load Balancer in front of one group's model servers, internal
unless the group declares it internet-facing."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.bucket_rules import access_log_rule
from gpucloud.components.agent_artifacts import lifecycle, private_bucket
from gpucloud.components.network import GpuNetwork
from gpucloud.config.endpoint import EndpointConfig
from gpucloud.documents.load_balancer_logs import load_balancer_logs_bucket_policy

REQUEST_COUNT_METRIC = "ALBRequestCountPerTarget"
INTERNET_FACING_TAG = {"gpu-cloud:internet-facing": "declared"}
"""The explicit word the `load-balancer-internal` policy looks for (`policy/rules/load_balancers.py`)."""


def endpoint_placement(
    endpoint: EndpointConfig, network: GpuNetwork | None, own_subnet_ids: Sequence[str],
) -> tuple[list[pulumi.Input[str]], list[pulumi.Resource]]:
    """The load balancer's subnets and what it waits for: the node subnets (the created network's,
    or the stack's own), or, internet-facing, the created network's public subnets and their route
    to the internet gateway (the config refuses internetFacing anywhere else)."""
    if network is None:
        return list(own_subnet_ids), []
    if endpoint.internet_facing:
        return list(network.public_subnet_ids.values()), list(network.public_routing)
    return list(network.private_subnet_ids.values()), []


def resource_label(load_balancer_arn_suffix: str, target_group_arn_suffix: str) -> str:
    """ALBRequestCountPerTarget's resource label, `app/<lb>/<id>/targetgroup/<tg>/<id>` (EC2 Auto
    Scaling API reference, PredefinedMetricSpecification `ResourceLabel`, read 2026-11-25)."""
    return f"{load_balancer_arn_suffix}/{target_group_arn_suffix}"


@dataclass(frozen=True)
class InferenceEndpointArgs:
    endpoint: EndpointConfig
    load_balancer_name: str
    target_group_name: str
    """32 characters at most each (`gpucloud.naming.elb_name`); the target group's changes with its
    port (`gpucloud.naming.target_group_name`)."""
    vpc_id: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets in at least two zones (an Application Load Balancer needs two): private ones, or
    public ones for an internet-facing endpoint (`endpoint_placement`)."""
    node_security_group_id: pulumi.Input[str]
    autoscaling_group_name: pulumi.Input[str]
    logs_bucket_name: str
    account_id: str
    region: str
    partition: str = "aws"
    instance_warmup_seconds: int = 900
    """How long a new node takes before its requests count in the scaling metric (the group's grace period)."""
    routing: Sequence[pulumi.Resource] = ()
    """What must exist before the load balancer: for an internet-facing one, its subnets' route to
    the internet gateway."""
    tags: Mapping[str, str] = field(default_factory=dict)


class InferenceEndpoint(pulumi.ComponentResource):
    """The load balancer, its own security group (only the listed callers in, only the nodes' port
    out), the nodes' rule admitting it, a target group with the server's health check, slow start
    and deregistration delay, its attachment to the Auto Scaling group, a listener, target
    tracking on requests per node, and the access-log bucket.

    A change of port replaces the target group: the new one (its own name) is created, the listener
    switched to it and the attachment replaced, and only then the old one deleted. The bridge alone
    would delete first, as for any resource whose name the program gives
    (pulumi-terraform-bridge pkg/tfbridge/schema.go nameRequiresDeleteBeforeReplace), and ELB does not
    delete a target group an action still references (DeleteTargetGroup, ELB API reference); the
    `deleteBeforeReplace: false` option overrides the bridge (pulumi/pulumi
    pkg/resource/deploy/step_generator.go), read 2026-11-28.

    The attachment is an `aws.autoscaling.Attachment` (AttachLoadBalancerTargetGroups): the group
    never sets `targetGroupArns` itself, which the provider keeps optional and computed, so the
    two do not fight (terraform-provider-aws internal/service/autoscaling/group.go and
    attachment.go, read 2026-11-25). The group keeps its EC2 health checks: the node agent's gate
    decides when a node is replaced, the load balancer only routes around a node that fails its
    check."""

    dns_name: pulumi.Output[str]
    """The endpoint's DNS name (resolving to private addresses unless internet-facing)."""
    url: pulumi.Output[str]
    """http(s)://<dns name>:<listener port>."""
    load_balancer_arn: pulumi.Output[str]
    target_group_arn: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    """The load balancer's security group."""

    def __init__(self, name: str, args: InferenceEndpointArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:InferenceEndpoint", name, None, opts)
        endpoint = args.endpoint
        child = pulumi.ResourceOptions(parent=self)
        listener_port = endpoint.effective_listener_port
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg", vpc_id=args.vpc_id, description=f"{args.load_balancer_name}: inference endpoint",
            tags={**args.tags, "Name": f"{name}-sg"}, opts=child,
        )
        under_group = pulumi.ResourceOptions(parent=self.security_group)
        sources = [*({"cidr_ipv6" if ":" in cidr else "cidr_ipv4": cidr} for cidr in endpoint.allowed_cidrs),
                   *({"referenced_security_group_id": group} for group in endpoint.allowed_security_group_ids)]
        self.ingress_rules = [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-callers-{index}", security_group_id=self.security_group.id,
                description=f"callers of the endpoint on {listener_port}", ip_protocol="tcp",
                from_port=listener_port, to_port=listener_port, tags={**args.tags, "Name": f"{name}-callers-{index}"},
                opts=under_group, **source,
            )
            for index, source in enumerate(sources)
        ]
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-to-nodes", security_group_id=self.security_group.id,
            description=f"requests and health checks to the nodes on {endpoint.port}", ip_protocol="tcp",
            from_port=endpoint.port, to_port=endpoint.port, referenced_security_group_id=args.node_security_group_id,
            tags={**args.tags, "Name": f"{name}-to-nodes"}, opts=under_group,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-from-lb", security_group_id=args.node_security_group_id,
            description=f"the inference endpoint to the model server on {endpoint.port}", ip_protocol="tcp",
            from_port=endpoint.port, to_port=endpoint.port, referenced_security_group_id=self.security_group.id,
            tags={**args.tags, "Name": f"{name}-nodes-from-lb"}, opts=under_group,
        )
        logging = self._log_bucket(name, args) if endpoint.access_logs.enabled else []
        facing = endpoint.internet_facing
        self.load_balancer = aws.lb.LoadBalancer(
            f"{name}-lb", name=args.load_balancer_name, load_balancer_type="application", internal=not facing,
            subnets=list(args.subnet_ids), security_groups=[self.security_group.id],
            idle_timeout=endpoint.idle_timeout_seconds, drop_invalid_header_fields=True,
            access_logs=(
                {"bucket": args.logs_bucket_name, "prefix": endpoint.access_logs.prefix, "enabled": True}
                if endpoint.access_logs.enabled else None
            ),
            tags={**args.tags, "Name": args.load_balancer_name, **(INTERNET_FACING_TAG if facing else {})},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*logging, *args.routing]),
        )
        self.target_group = aws.lb.TargetGroup(
            f"{name}-tg", name=args.target_group_name, vpc_id=args.vpc_id, target_type="instance",
            port=endpoint.port, protocol="HTTP", slow_start=endpoint.slow_start_seconds,
            deregistration_delay=str(endpoint.deregistration_delay_seconds),
            health_check={
                "enabled": True, "path": endpoint.health_check_path, "port": "traffic-port", "protocol": "HTTP",
                "interval": endpoint.health_check_interval_seconds, "timeout": endpoint.health_check_timeout_seconds,
                "healthy_threshold": endpoint.healthy_threshold, "unhealthy_threshold": endpoint.unhealthy_threshold,
                "matcher": "200",
            },
            tags={**args.tags, "Name": args.target_group_name},
            # Its name is given, so the bridge would replace it delete-first, which ELB refuses while
            # the listener forwards to it (pulumi/pulumi-aws#4220). The name changes with what
            # replaces it (`naming.target_group_name`), so the replacement is created first instead.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=False),
        )
        self.listener = aws.lb.Listener(
            f"{name}-listener", load_balancer_arn=self.load_balancer.arn, port=listener_port,
            protocol=endpoint.protocol, certificate_arn=endpoint.certificate_arn,
            ssl_policy="ELBSecurityPolicy-TLS13-1-2-2021-06" if endpoint.protocol == "HTTPS" else None,
            default_actions=[{"type": "forward", "target_group_arn": self.target_group.arn}],
            tags={**args.tags, "Name": f"{name}-listener"}, opts=child,
        )
        self.attachment = aws.autoscaling.Attachment(
            f"{name}-attachment", autoscaling_group_name=args.autoscaling_group_name,
            lb_target_group_arn=self.target_group.arn, opts=child,
        )
        self.scaling_policy = None
        if endpoint.requests_per_target is not None:
            self.scaling_policy = aws.autoscaling.Policy(
                f"{name}-requests-per-node", autoscaling_group_name=args.autoscaling_group_name,
                policy_type="TargetTrackingScaling", estimated_instance_warmup=args.instance_warmup_seconds,
                target_tracking_configuration={
                    "predefined_metric_specification": {
                        "predefined_metric_type": REQUEST_COUNT_METRIC,
                        "resource_label": pulumi.Output.all(self.load_balancer.arn_suffix, self.target_group.arn_suffix)
                        .apply(lambda suffixes: resource_label(*suffixes)),
                    },
                    "target_value": endpoint.requests_per_target,
                },
                # Auto Scaling takes the label only once the target group is attached to the group.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.attachment, self.listener]),
            )
        scheme = "https" if endpoint.protocol == "HTTPS" else "http"
        self.dns_name = self.load_balancer.dns_name
        self.url = pulumi.Output.concat(scheme, "://", self.load_balancer.dns_name, f":{listener_port}")
        self.load_balancer_arn = self.load_balancer.arn
        self.target_group_arn = self.target_group.arn
        self.security_group_id = self.security_group.id
        self.register_outputs({"dnsName": self.dns_name, "url": self.url, "loadBalancerArn": self.load_balancer_arn,
                               "targetGroupArn": self.target_group_arn, "securityGroupId": self.security_group_id})

    def _log_bucket(self, name: str, args: InferenceEndpointArgs) -> list[pulumi.Resource]:
        """A private bucket with SSE-S3 (the only encryption ALB log delivery takes), a retention
        rule, and the policy that lets the region's log writer put objects under the prefix."""
        logs = args.endpoint.access_logs
        self.log_bucket = aws.s3.Bucket(
            f"{name}-logs", bucket=args.logs_bucket_name, force_destroy=True,
            tags={**args.tags, "Name": args.logs_bucket_name}, opts=pulumi.ResourceOptions(parent=self),
        )
        under = pulumi.ResourceOptions(parent=self.log_bucket)
        settings = [
            *private_bucket(f"{name}-logs", self.log_bucket.id, under),
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{name}-logs-encryption", bucket=self.log_bucket.id,
                rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}], opts=under,
            ),
        ]
        rule = {**access_log_rule("gpu-cloud-endpoint-logs"), "Expiration": {"Days": logs.retention_days}}
        settings.append(lifecycle(f"{name}-logs-retention", self.log_bucket.id, rule, under))
        policy = aws.s3.BucketPolicy(
            f"{name}-logs-policy", bucket=self.log_bucket.id,
            policy=self.log_bucket.arn.apply(lambda arn: json.dumps(load_balancer_logs_bucket_policy(
                arn, logs.prefix, args.account_id, args.region, args.partition))),
            opts=pulumi.ResourceOptions(parent=self.log_bucket, depends_on=settings[:2]),
        )
        return [*settings, policy]
