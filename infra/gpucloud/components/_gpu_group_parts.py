"""GpuInstanceGroup's pure pieces: what its launch templates and Auto Scaling group are built from.

Plain values from the group's args and instance type facts (a node shape, the user data a shape's
nodes boot with, network interfaces, block devices, lifecycle hooks, the mixed instances policy's
overrides), so `gpu_group` only declares resources and each piece is tested without an engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi

from gpucloud.components.autoscaling import GPU_METRICS_NAMESPACE
from gpucloud.components.encrypted_volume import ATTACH_TAG
from gpucloud.lookups import InstanceTypeFacts
from gpucloud.limits import MAX_REQUIREMENT_SETS
from gpucloud.userdata.render import (
    NodeBootstrap,
    instance_type_has_nvlink,
    instance_type_has_nvswitch,
    user_data_base64,
)

if TYPE_CHECKING:
    import pulumi_aws as aws

    from gpucloud.components.gpu_group_args import GpuInstanceGroupArgs


DATA_DEVICE_NAME = "/dev/sdf"
"""Where a group's data volume (`data_volume_gib`) is attached; the node's user data names it too."""


def launch_hook_name(group_name: str) -> str:
    return f"{group_name}-launch"


def terminate_hook_name(group_name: str) -> str:
    return f"{group_name}-terminate"


def node_shape(facts: InstanceTypeFacts, multi_node: bool) -> tuple:
    """What a launch template must know about a type: EFA cards, GPUs, NVLink, scratch disks."""
    return (
        facts.efa_interfaces if multi_node else 0,
        facts.gpu_count,
        facts.gpu_model,
        instance_type_has_nvlink(facts.name, facts.gpu_count),
        facts.instance_store_disks,
        instance_type_has_nvswitch(facts.name, facts.gpu_count),
    )


def node_bootstrap(
    args: GpuInstanceGroupArgs,
    facts: InstanceTypeFacts,
    remote_write_url: str | None = None,
    file_system: Mapping[str, str] | None = None,
) -> NodeBootstrap:
    """The user data parameters for nodes of this type: what the health gate expects to find, and
    where the collector writes (the workspace's URL, known once the workspace exists)."""
    return NodeBootstrap(
        project=args.project,
        group_name=args.group_name,
        region=args.region,
        expected_gpu_count=facts.node_gpu_count,
        expected_gpu_model=facts.gpu_model,
        launch_hook_name=launch_hook_name(args.group_name),
        terminate_hook_name=terminate_hook_name(args.group_name),
        max_temperature_c=args.max_temperature_c,
        nvlink_expected=instance_type_has_nvlink(facts.name, facts.gpu_count),
        fabric_expected=instance_type_has_nvswitch(facts.name, facts.gpu_count),
        scratch_disk_count=facts.instance_store_disks,
        data_disk_device=DATA_DEVICE_NAME if args.data_volume_gib else None,
        persistent_volume_tag_key=ATTACH_TAG if args.persistent_volume_attach_to else None,
        persistent_volume_tag_value=args.persistent_volume_attach_to,
        checkpoint_bucket=args.checkpoint_bucket,
        checkpoint_prefix=args.checkpoint_prefix.rstrip("/") if args.checkpoint_prefix else None,
        checkpoint_command=tuple(args.checkpoint_command) if args.checkpoint_command else None,
        checkpoint_dir=args.checkpoint_directory,
        checkpoint_timeout_s=args.checkpoint_timeout_seconds,
        cloudwatch_namespace=GPU_METRICS_NAMESPACE,
        boot_phase_log_group=args.boot_phase_log_group,
        agent_bucket=args.agent_bucket,
        agent_key=args.agent_key,
        agent_sha256=args.agent_sha256,
        efa_expected=args.multi_node and facts.efa_interfaces > 0,
        health_interval_s=args.health_interval_seconds,
        throttle_minutes=args.throttle_minutes,
        max_replacements_per_hour=args.max_replacements_per_hour,
        replace_faulty_nodes=args.replace_faulty_nodes,
        prometheus_remote_write_url=remote_write_url,
        prometheus_scrape_interval_s=args.prometheus_scrape_interval_seconds,
        services=args.services,
        lustre_source=f"{file_system['dns_name']}@tcp:/{file_system['mount_name']}" if file_system else None,
        s3_mounts=tuple(args.s3_mounts),
        s3_mount_install=args.s3_mount_install,
    )


def user_data(args: GpuInstanceGroupArgs, facts: InstanceTypeFacts) -> pulumi.Input[str]:
    """Plain text where every value is known; else resolved once the workspace's URL and the
    shared file system's DNS and mount names are."""
    if args.prometheus_remote_write_url is None and args.shared_file_system is None:
        return user_data_base64(node_bootstrap(args, facts))
    return pulumi.Output.all(args.prometheus_remote_write_url, args.shared_file_system).apply(
        lambda values: user_data_base64(node_bootstrap(args, facts, values[0], values[1]))
    )


def reservation_specification(args: GpuInstanceGroupArgs) -> dict | None:
    """Auto Scaling's CapacityReservationSpecification: with preference `none` (or `open`) it takes
    no CapacityReservationTarget (botocore autoscaling model 2011-01-01, that shape's documentation)."""
    if args.capacity_reservation_preference is None:
        return None
    if args.capacity_reservation_preference in ("none", "open"):
        return {"capacity_reservation_preference": args.capacity_reservation_preference}
    target = {
        "capacity_reservation_ids": list(args.capacity_reservation_ids) or None,
        "capacity_reservation_resource_group_arns": list(args.capacity_reservation_group_arns) or None,
    }
    return {
        "capacity_reservation_preference": args.capacity_reservation_preference,
        "capacity_reservation_target": {key: value for key, value in target.items() if value},
    }


def warm_pool_settings(pool: Mapping[str, object] | None) -> dict | None:
    if pool is None:
        return None
    settings = {
        "min_size": pool.get("min_size", 0),
        "max_group_prepared_capacity": pool.get("max_group_prepared_capacity"),
        "pool_state": pool.get("pool_state", "Stopped"),
        "instance_reuse_policy": {"reuse_on_scale_in": bool(pool.get("reuse_on_scale_in"))},
    }
    return {key: value for key, value in settings.items() if value is not None}


def network_interfaces(args: GpuInstanceGroupArgs, efa_interfaces: int) -> list[dict]:
    """No public IP; on multi-node groups one EFA interface per network card (first `efa`, then
    `efa-only`), each carrying the group's security group."""
    common = {"security_groups": [args.security_group_id], "delete_on_termination": "true"}
    if not args.multi_node:
        return [{"device_index": 0, "associate_public_ip_address": "false", **common}]
    return [
        {
            "network_card_index": card,
            "device_index": 0 if card == 0 else 1,
            "interface_type": "efa" if card == 0 else "efa-only",
            **({"associate_public_ip_address": "false"} if card == 0 else {}),
            **common,
        }
        for card in range(efa_interfaces)
    ]


def block_devices(args: GpuInstanceGroupArgs) -> list[dict]:
    def encrypted_gp3(size: int) -> dict:
        return {
            "volume_size": size,
            "volume_type": "gp3",
            "encrypted": "true",
            "kms_key_id": args.kms_key_arn,
            "delete_on_termination": "true",
        }

    devices = [{"device_name": args.root_device_name, "ebs": encrypted_gp3(args.root_volume_gib)}]
    if args.data_volume_gib:
        devices.append({"device_name": DATA_DEVICE_NAME, "ebs": encrypted_gp3(args.data_volume_gib)})
    return devices


def node_shapes(args: GpuInstanceGroupArgs) -> dict[tuple, list[InstanceTypeFacts]]:
    """The group's instance types by node shape, shapes and types in the order listed: one launch
    template each, the first the group's own."""
    shapes: dict[tuple, list[InstanceTypeFacts]] = {}
    for facts in args.instance_types:
        shapes.setdefault(node_shape(facts, args.multi_node), []).append(facts)
    return shapes


def template_spec(template: aws.ec2.LaunchTemplate) -> dict:
    """A launch template as a mixed instances policy names it."""
    return {"launch_template_id": template.id, "version": template.latest_version.apply(str)}


def template_spec_plain(template: aws.ec2.LaunchTemplate) -> dict:
    """A launch template as the group's own `launch_template` names it."""
    return {"id": template.id, "version": template.latest_version.apply(str)}


def mixed_instances_overrides(
    args: GpuInstanceGroupArgs, shapes: dict[tuple, list[InstanceTypeFacts]], templates: dict[tuple, aws.ec2.LaunchTemplate],
) -> list[dict]:
    """The mixed instances policy's overrides; one of a shape other than the first names its own
    launch template. One requirements set per node shape, while Auto Scaling takes them (at most
    four per group); past that the shapes' matched types are listed as types, which allows exactly
    the same types. Listed types keep the stack file's order across shapes: the overrides' order
    is the priority of on-demand `prioritized` and spot `capacity-optimized-prioritized` (Auto
    Scaling API reference, InstancesDistribution, read 2026-11-28)."""
    primary_shape = next(iter(shapes))
    if bool(args.instance_requirements) and len(shapes) <= MAX_REQUIREMENT_SETS:
        chosen = [(shape, {"instance_requirements": {**args.instance_requirements,
                                                     "allowed_instance_types": [f.name for f in types]}})
                  for shape, types in shapes.items()]
    else:
        chosen = [(shape, {"instance_type": facts.name}) for facts in args.instance_types
                  for shape in shapes if facts in shapes[shape]]
    for shape, override in chosen:
        if shape != primary_shape:
            override["launch_template_specification"] = template_spec(templates[shape])
    return [override for _shape, override in chosen]


def lifecycle_hooks(args: GpuInstanceGroupArgs) -> dict[str, dict]:
    """The launch hook a new node completes once its gate passes (ABANDON when it never does), and
    the terminate hook a leaving node completes once drained (CONTINUE when it never does)."""
    return {
        launch_hook_name(args.group_name): {
            "lifecycle_transition": "autoscaling:EC2_INSTANCE_LAUNCHING",
            "default_result": "ABANDON",
            "heartbeat_timeout": args.launch_hook_timeout_seconds,
        },
        terminate_hook_name(args.group_name): {
            "lifecycle_transition": "autoscaling:EC2_INSTANCE_TERMINATING",
            "default_result": "CONTINUE",
            "heartbeat_timeout": args.terminate_hook_timeout_seconds,
        },
    }
