"""The plan as a reviewer reads it: a resource tree with the few properties that matter."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpucloud.plan.access_report import access_summary
from gpucloud.plan.capacity_line import render_capacity
from gpucloud.plan.cold_start import cold_start_line
from gpucloud.plan.image_software import image_software_line
from gpucloud.plan.model import POLICY_PACK, Plan
from gpucloud.plan.purchase import purchase_line
from gpucloud.plan.tree_columns import MARKER_WIDTH, OPERATION_WIDTH, tree_layout
from gpucloud.pricing.render import render_estimate
from gpucloud.testing import AppliedResource

Summary = Callable[[dict[str, Any]], str]

UNPRICED_COMPUTE_RULES = ("unpriced-compute", "unpriced-compute-accepted")
"""Budget findings on GPU compute the catalog cannot price: repeated on the summary lines."""


def _on(value: Any) -> bool:
    return str(value).lower() == "true"


def _key(state: dict[str, Any]) -> str:
    rotation = "rotation on" if state.get("enableKeyRotation") else "ROTATION OFF"
    return f"{rotation}, deletion window {state.get('deletionWindowInDays', 30)} days"


def _role_policy(state: dict[str, Any]) -> str:
    document = json.loads(state.get("policy") or "{}")
    return f"{len(document.get('Statement', []))} statements"


def _rule(state: dict[str, Any], direction: str) -> str:
    protocol = state.get("ipProtocol")
    low, high = state.get("fromPort"), state.get("toPort")
    ports = f"{low}" if high in (None, low) else f"{low}-{high}"
    what = "all traffic" if protocol in ("-1", "all") else f"{protocol} {ports}"
    referenced = state.get("referencedSecurityGroupId")
    peer = state.get("cidrIpv4") or state.get("cidrIpv6") or (
        ("members of this group" if referenced == state.get("securityGroupId") else f"security group {referenced}")
        if referenced else "?"
    )
    return f"{what} {direction} {peer}"


def _volume(state: dict[str, Any]) -> str:
    encryption = "encrypted (project key)" if state.get("encrypted") and state.get("kmsKeyId") else "NOT ENCRYPTED WITH A CMK"
    return f"{state.get('type')} {state.get('size')} GiB in {state.get('availabilityZone')}, {encryption}"


def _launch_template(state: dict[str, Any]) -> str:
    metadata = state.get("metadataOptions") or {}
    imds = "IMDSv2 required" if metadata.get("httpTokens") == "required" else "IMDSv2 NOT REQUIRED"
    disks = [
        f"{(mapping.get('ebs') or {}).get('volumeSize')} GiB{' encrypted' if _on((mapping.get('ebs') or {}).get('encrypted')) else ' UNENCRYPTED'}"
        for mapping in state.get("blockDeviceMappings", [])
    ]
    interfaces = state.get("networkInterfaces", [])
    efa = sum(1 for interface in interfaces if str(interface.get("interfaceType", "")).startswith("efa"))
    public = any(_on(interface.get("associatePublicIpAddress")) for interface in interfaces)
    hop = metadata.get("httpPutResponseHopLimit")
    containers = (state.get("tags") or {}).get("gpu-cloud:containers") == "true"
    parts = [f"{imds} (hop {hop}{': containers' if containers and hop == 2 else ''})", "disks " + " + ".join(disks) if disks else "no block devices"]
    if efa:
        parts.append(f"{efa} EFA interfaces")
    if (state.get("instanceMarketOptions") or {}).get("marketType") == "capacity-block":
        target = (state.get("capacityReservationSpecification") or {}).get("capacityReservationTarget") or {}
        parts.append(f"capacity block {target.get('capacityReservationId')}")
    parts.append("PUBLIC IP" if public else "no public IP")
    return ", ".join(parts)


def _group(state: dict[str, Any]) -> str:
    policy = state.get("mixedInstancesPolicy") or {}
    types = [override.get("instanceType") for override in (policy.get("launchTemplate") or {}).get("overrides", [])]
    if not policy and state.get("launchTemplate"):
        types = ["one launch template, on-demand"]
    distribution = policy.get("instancesDistribution") or {}
    spot = 100 - int(distribution.get("onDemandPercentageAboveBaseCapacity", 100))
    parts = [
        ", ".join(types),
        f"size {state.get('minSize')}..{state.get('maxSize')} (desired {state.get('desiredCapacity')})",
        f"on-demand base {distribution.get('onDemandBaseCapacity', 0)}, spot {spot}% above",
        f"rebalance {'on' if state.get('capacityRebalance') else 'off'}",
        f"{len(state.get('vpcZoneIdentifiers', []))} subnet(s)",
    ]
    if state.get("placementGroup"):
        parts.append("cluster placement")
    reservations = state.get("capacityReservationSpecification") or {}
    if reservations.get("capacityReservationPreference"):
        target = reservations.get("capacityReservationTarget") or {}
        named = [*(target.get("capacityReservationIds") or []), *(target.get("capacityReservationResourceGroupArns") or [])]
        parts.append(f"reservations {reservations['capacityReservationPreference']}: {', '.join(named)}")
    pool = state.get("warmPool") or {}
    if pool:
        parts.append(f"warm pool {pool.get('poolState', 'Stopped')} min {pool.get('minSize', 0)}")
    return "; ".join(parts)


def _scaling_policy(state: dict[str, Any]) -> str:
    if state.get("policyType") == "TargetTrackingScaling":
        tracking = state.get("targetTrackingConfiguration") or {}
        metric = ((tracking.get("customizedMetricSpecification") or {}).get("metricName")
                  or (tracking.get("predefinedMetricSpecification") or {}).get("predefinedMetricType"))
        return f"target tracking {metric} at {tracking.get('targetValue')}"
    adjustment_type = state.get("adjustmentType") or "ChangeInCapacity"
    steps = state.get("stepAdjustments") or []
    if not steps and state.get("scalingAdjustment") is not None:
        return f"simple: {_adjustment(adjustment_type, state['scalingAdjustment'])}"
    return "step: " + ", ".join(_adjustment(adjustment_type, step["scalingAdjustment"]) for step in steps)


def _adjustment(adjustment_type: str, value: Any) -> str:
    """What one scaling adjustment does, in words: ExactCapacity 0 is a scale to zero, not a "+0" step."""
    amount = int(value)
    if adjustment_type == "ExactCapacity":
        return f"set capacity to {amount}"
    if adjustment_type == "PercentChangeInCapacity":
        return f"{amount:+d}% capacity"
    return f"{amount:+d} instance{'' if abs(amount) == 1 else 's'}"


def _schedule(state: dict[str, Any]) -> str:
    sizes = ", ".join(
        f"{label} {state[key]}" for key, label in (("minSize", "min"), ("maxSize", "max"), ("desiredCapacity", "desired"))
        if state.get(key, -1) >= 0
    )
    if not state.get("recurrence"):
        return f"once at {state.get('startTime')}: {sizes}"
    return f"'{state.get('recurrence')}' {state.get('timeZone', 'UTC')}: {sizes}"


def _alarm(state: dict[str, Any]) -> str:
    if state.get("metricQueries"):
        expression = next(q.get("expression") for q in state["metricQueries"] if q.get("expression"))
        return f"{expression} > {state.get('threshold')} for {state.get('evaluationPeriods')} periods"
    operator = {"GreaterThanOrEqualToThreshold": ">=", "LessThanThreshold": "<", "GreaterThanThreshold": ">"}.get(
        state.get("comparisonOperator", ""), state.get("comparisonOperator")
    )
    return (
        f"{state.get('metricName')} {operator} {state.get('threshold')} "
        f"for {state.get('evaluationPeriods')}x{state.get('period')}s"
    )


def _bucket_encryption(state: dict[str, Any]) -> str:
    rules = state.get("rules") or [{}]
    default = rules[0].get("applyServerSideEncryptionByDefault") or {}
    if default.get("sseAlgorithm") == "aws:kms" and default.get("kmsMasterKeyId"):
        return "SSE-KMS with the project key" + (", bucket key" if rules[0].get("bucketKeyEnabled") else "")
    return f"NOT KMS: {default.get('sseAlgorithm')}"


def _public_access_block(state: dict[str, Any]) -> str:
    settings = ("blockPublicAcls", "ignorePublicAcls", "blockPublicPolicy", "restrictPublicBuckets")
    open_settings = [name for name in settings if not state.get(name)]
    return "all public access blocked" if not open_settings else "PUBLIC ACCESS ALLOWED: " + ", ".join(open_settings) + " off"


def _bucket_policy(state: dict[str, Any]) -> str:
    statements = json.loads(state.get("policy") or "{}").get("Statement", [])
    return ", ".join(f"{statement.get('Effect', '?').lower()} {statement.get('Sid', '?')}" for statement in statements)


def _bucket_object(state: dict[str, Any]) -> str:
    size = len(state.get("contentBase64") or "") * 3 // 4 or len(state.get("content") or "")
    encryption = "SSE-KMS" if state.get("serverSideEncryption") == "aws:kms" else "NOT SSE-KMS"
    return f"{state.get('key')}, {size / 1024:.0f} KiB, {encryption}"


def _capacity_block_purchase(state: dict[str, Any]) -> str:
    return (f"PURCHASE (not refundable): {state.get('instanceCount')} x {state.get('instanceType')} in "
            f"{state.get('availabilityZone')}, {state.get('startDate')} to {state.get('endDate')}, "
            f"{state.get('upfrontFee')} USD upfront")


SUMMARIES: dict[str, Summary] = {
    "aws:ec2/capacityBlockReservation:CapacityBlockReservation": _capacity_block_purchase,
    "aws:kms/key:Key": _key,
    "aws:kms/alias:Alias": lambda state: str(state.get("name")),
    "aws:iam/role:Role": lambda state: str(state.get("name")),
    "aws:iam/rolePolicy:RolePolicy": _role_policy,
    "aws:iam/instanceProfile:InstanceProfile": lambda state: str(state.get("name")),
    "aws:ec2/securityGroup:SecurityGroup": lambda state: f"in {state.get('vpcId')}",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": lambda state: _rule(state, "from"),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": lambda state: _rule(state, "to"),
    "aws:ebs/volume:Volume": _volume,
    "aws:ec2/placementGroup:PlacementGroup": lambda state: f"strategy {state.get('strategy')}",
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:autoscaling/group:Group": _group,
    "aws:autoscaling/policy:Policy": _scaling_policy,
    "aws:autoscaling/schedule:Schedule": _schedule,
    "aws:cloudwatch/metricAlarm:MetricAlarm": _alarm,
    "aws:cloudwatch/dashboard:Dashboard": lambda state: str(state.get("dashboardName")),
    "aws:sns/topic:Topic": lambda state: f"{state.get('name')}, encrypted with the project key" if state.get("kmsMasterKeyId") else str(state.get("name")),
    "aws:ssm/parameter:Parameter": lambda state: (
        f"{state.get('name')}: {state.get('type')}{', project key' if state.get('keyId') else ''}, "
        f"{state.get('tier') or 'Standard'} tier (no charge); the node writes the value"),
    "aws:sns/topicSubscription:TopicSubscription": lambda state: f"{state.get('protocol')} {state.get('endpoint')}",
    "aws:sns/topicPolicy:TopicPolicy": lambda state: "publish: CloudWatch alarms and AWS Budgets of this account",
    "aws:backup/vault:Vault": lambda state: f"{state.get('name')}, encrypted with the project key",
    "aws:backup/plan:Plan": lambda state: "; ".join(
        f"{rule.get('schedule')}, kept {(rule.get('lifecycle') or {}).get('deleteAfter')} days" for rule in state.get("rules", [])
    ),
    "aws:backup/selection:Selection": lambda state: ", ".join(
        f"{tag.get('key')}={tag.get('value')}" for tag in state.get("selectionTags", [])
    ),
    "aws:s3/bucket:Bucket": lambda state: str(state.get("bucket")),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _bucket_encryption,
    "aws:s3/bucketVersioning:BucketVersioning": lambda state: (
        f"versioning {str((state.get('versioningConfiguration') or {}).get('status', '?')).lower()}"
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _public_access_block,
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": lambda state: (
        str((state.get("rule") or {}).get("objectOwnership")) + " (ACLs off)"
        if (state.get("rule") or {}).get("objectOwnership") == "BucketOwnerEnforced"
        else str((state.get("rule") or {}).get("objectOwnership"))
    ),
    "aws:s3/bucketPolicy:BucketPolicy": _bucket_policy,
    "aws:s3/bucketObjectv2:BucketObjectv2": _bucket_object,
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": lambda state: str(state.get("policyArn")),
    "aws:budgets/budget:Budget": lambda state: (
        f"{state.get('limitAmount')} {state.get('limitUnit')}/month on "
        + ", ".join(v for f in state.get("costFilters", []) for v in f.get("values", []))
        + f"; {len(state.get('notifications', []))} alerts"
    ),
}


def describe(resource: AppliedResource) -> str:
    summary = SUMMARIES.get(resource.type)
    info = summary(resource.state) if summary and resource.custom else ""
    flags = [flag for flag, on in (("protected", resource.protect), ("retained on delete", resource.retain_on_delete)) if on]
    if not resource.validated:
        flags.append("not validated by moto")
    return "; ".join(part for part in (info, ", ".join(flags)) if part)


def _tree_rows(plan: Plan) -> list[tuple[str, AppliedResource]]:
    children: dict[str, list[AppliedResource]] = {}
    for resource in plan.resources:
        children.setdefault(resource.parent or plan.stack_urn, []).append(resource)
    rows: list[tuple[str, AppliedResource]] = []

    def walk(parent: str, indent: str) -> None:
        siblings = sorted(children.get(parent, []), key=lambda resource: (resource.custom, resource.name))
        for index, resource in enumerate(siblings):
            last = index == len(siblings) - 1
            rows.append((f"{indent}{'└─ ' if last else '├─ '}", resource))
            walk(resource.urn, indent + ("   " if last else "│  "))

    walk(plan.stack_urn, "")
    return rows


def policy_summary(plan: Plan) -> str:
    """One line on the policy check, printed even when nothing was found."""
    disabled = len(plan.policy_levels) - len(plan.policies_run)
    run = f"{len(plan.policies_run)} run" + (f" ({disabled} disabled by the policy config)" if disabled else "")
    count = len(plan.policy_violations)
    violations = f"{count} violation{'' if count == 1 else 's'}"
    if count:
        mandatory = sum(1 for violation in plan.policy_violations if violation.mandatory)
        violations += f": {mandatory} mandatory, {count - mandatory} advisory"
    return f"Policies: {run}, {violations} ({POLICY_PACK} pack)"


def coverage_summary(plan: Plan) -> str:
    """One line on the inputs nothing checked: neither sent to AWS by the engine nor covered by a
    cited provider rule (the goal is zero; `--json` lists them under inputCoverage)."""
    count = len(plan.unchecked_inputs)
    return (f"    {count} input propert{'y' if count == 1 else 'ies'} neither sent to AWS nor checked by a "
            "provider rule (--json lists them)")


def render(plan: Plan, console: Console) -> None:
    console.print(
        f"Previewing update ([bold]{plan.stack}[/bold]) on the moto engine: offline, {plan.region}, nothing is deployed\n"
    )
    rows = [("", "pulumi:pulumi:Stack", f"{plan.project}-{plan.stack}", None),
            *((prefix, resource.type, resource.name, resource) for prefix, resource in _tree_rows(plan))]
    layout = tree_layout(console.width, [(prefix, token, name) for prefix, token, name, _resource in rows])
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column, width in (("", MARKER_WIDTH), ("Type", layout.type_width), ("Name", layout.name_width),
                          ("Plan", OPERATION_WIDTH)):
        table.add_column(column, no_wrap=True, width=width)
    table.add_column("Info", overflow="fold", width=layout.info_width)
    for prefix, token, name, resource in rows:
        table.add_row(
            Text("+", style="green"),
            Text(layout.type_cell(prefix, token)),
            layout.name_cell(name),
            Text("create", style="green"),
            describe(resource) if resource is not None else "",
        )
    console.print(table)
    if plan.outputs:
        console.print("\nOutputs:")
        for name, value in plan.outputs.items():
            console.print(f"    {name}: {json.dumps(value, default=str)}", soft_wrap=True)
    console.print(f"\nResources:\n    + {len(plan.resources) + 1} to create")
    unvalidated = [resource for resource in plan.resources if not resource.validated]
    if unvalidated:
        console.print(f"    ({len(unvalidated)} recorded without moto validation: {', '.join(r.type for r in unvalidated)})")
    console.print(coverage_summary(plan))
    if plan.purchase_options:
        console.print("\nPurchase options (on-demand/spot per group):")
        for option in plan.purchase_options:
            console.print(f"    {purchase_line(option)}", soft_wrap=True)
    if plan.image_software:
        console.print("\nImage software (what each group's features rely on, and where it comes from):")
        for entry in plan.image_software:
            console.print(f"    {image_software_line(entry)}", soft_wrap=True)
    if plan.capacity:
        render_capacity(plan.capacity, console)
    if plan.cold_start:
        console.print("\nCold start (estimated time to ready per group, against the timers that act before it):")
        for entry in plan.cold_start:
            console.print(f"    {cold_start_line(entry)}", soft_wrap=True)
    console.print(f"\n{policy_summary(plan)}")
    if plan.access is not None:
        console.print(access_summary(plan.access))
    for finding in plan.findings:
        if finding.rule in UNPRICED_COMPUTE_RULES:
            style = "bold red" if finding.severity == "failure" else "bold yellow"
            console.print(Text(f"Cost: {finding.message}", style=style), soft_wrap=True)
    if plan.policy_violations:
        console.print("\nPolicy Violations:")
        names = {resource.urn: f"{resource.type}: {resource.name}" for resource in plan.resources}
        for violation in plan.policy_violations:
            style = "bold red" if violation.mandatory else "yellow"
            console.print(
                Text(f"    [{violation.enforcement_level}]  {violation.policy_name}", style=style)
                + Text(f"  ({names.get(violation.urn, 'stack')})"),
                soft_wrap=True,
            )
            if violation.urn:
                console.print(f"    {violation.urn}", soft_wrap=True)
            console.print(f"    {violation.message}\n", soft_wrap=True)
    if plan.cost_estimate:
        console.print()
        render_estimate(plan.cost_estimate, console)
    if plan.findings:
        console.print("\nFindings:")
        for finding in plan.findings:
            style = {"failure": "bold red", "warning": "yellow"}.get(finding.severity, "")
            where = f" {finding.urn}" if finding.urn else ""
            console.print(
                Text(f"    {finding.severity} [{finding.source}: {finding.rule}]{where}: ", style=style) + Text(finding.message),
                soft_wrap=True,
            )
