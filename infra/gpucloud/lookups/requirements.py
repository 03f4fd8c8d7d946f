"""GPU types by attributes: the region's GPU instance types, and which of them a group's
`instanceRequirements` match, as Auto Scaling's attribute-based selection would choose them.

The plan resolves the requirements to concrete types, so a reviewer sees (and the estimate
prices) exactly what the group may launch; the group's mixed instances policy then carries the
requirements with those types as its allowed types.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pulumi_aws as aws

from gpucloud.config import InstanceRequirementsConfig
from gpucloud.lookups.facts import LookupUnavailable

GPU_FAMILIES = re.compile(r"^(p|g|gr)\d")
"""Instance families that carry GPUs (P and G, and the graphics G variants); other families are
not asked about, which keeps the lookup to the few dozen types a region offers there."""


@dataclass(frozen=True)
class GpuTypeAttributes:
    name: str
    gpu_count: int
    manufacturer: str
    gpu_name: str
    total_gpu_memory_mib: int
    vcpus: int
    memory_mib: int


def _fnmatch(pattern: str) -> re.Pattern[str]:
    """AllowedInstanceTypes and ExcludedInstanceTypes take `*` wildcards (EC2 API reference,
    InstanceRequirements, read 2026-11-25)."""
    return re.compile("^" + re.escape(pattern).replace(r"\*", ".*") + "$")


def _within(value: int, bounds) -> bool:
    if bounds is None:
        return True
    return (bounds.min is None or value >= bounds.min) and (bounds.max is None or value <= bounds.max)


def matches(requirements: InstanceRequirementsConfig, gpu: GpuTypeAttributes) -> bool:
    if gpu.gpu_count < 1 and not gpu.gpu_name:
        return False
    if requirements.gpu_manufacturers and gpu.manufacturer.lower() not in requirements.gpu_manufacturers:
        return False
    if requirements.gpu_names and gpu.gpu_name.lower() not in requirements.gpu_names:
        return False
    if not (_within(gpu.gpu_count, requirements.gpu_count) and _within(gpu.total_gpu_memory_mib, requirements.total_gpu_memory_mib)
            and _within(gpu.vcpus, requirements.vcpus) and _within(gpu.memory_mib, requirements.memory_mib)):
        return False
    if requirements.allowed_instance_types and not any(
            _fnmatch(pattern).match(gpu.name) for pattern in requirements.allowed_instance_types):
        return False
    return not any(_fnmatch(pattern).match(gpu.name) for pattern in requirements.excluded_instance_types)


def matching_types(requirements: InstanceRequirementsConfig, candidates: list[GpuTypeAttributes]) -> list[str]:
    return sorted(gpu.name for gpu in candidates if matches(requirements, gpu))


@functools.cache
def region_gpu_types() -> tuple[GpuTypeAttributes, ...]:
    """Every GPU type the region offers (DescribeInstanceTypeOfferings, then DescribeInstanceTypes)."""
    try:
        offered = aws.ec2.get_instance_type_offerings(location_type="region").instance_types
        found = []
        for name in sorted(set(offered)):
            if not GPU_FAMILIES.match(name):
                continue
            details = aws.ec2.get_instance_type(instance_type=name)
            gpus = details.gpuses or []
            if not gpus:
                continue
            found.append(GpuTypeAttributes(
                name=name, gpu_count=sum(gpu.count for gpu in gpus), manufacturer=gpus[0].manufacturer or "",
                gpu_name=gpus[0].name or "", total_gpu_memory_mib=int(details.total_gpu_memory or 0),
                vcpus=int(details.default_vcpus or 0), memory_mib=int(details.memory_size or 0),
            ))
    except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
        raise LookupUnavailable(str(error)) from error
    return tuple(found)


REQUIREMENT_FLOOR = 1
"""The least minimum terraform-provider-aws takes for an Auto Scaling group's vcpu_count and memory_mib."""


def aws_instance_requirements(requirements: InstanceRequirementsConfig, allowed: list[str]) -> dict:
    """pulumi-aws's InstanceRequirements for a mixed instances policy override: the requirements,
    held to the types the plan showed (AllowedInstanceTypes), GPUs only.

    Auto Scaling needs VCpuCount and MemoryMiB; without `vcpus`/`memoryMiB` they get a minimum of 1,
    the least terraform-provider-aws takes (`vcpu_count.min` and `memory_mib.min` are
    `validation.IntAtLeast(1)` in internal/service/autoscaling/group.go, read 2026-11-25)."""
    def bounds(value, floor: int | None = None) -> dict | None:
        if value is None:
            return {"min": floor} if floor is not None else None
        result = {key: getattr(value, key) for key in ("min", "max") if getattr(value, key) is not None}
        if floor is not None:
            # no instance type has 0 vCPUs or 0 MiB, so a minimum under the floor selects the same types
            result["min"] = max(result.get("min") or 0, floor)
        return result

    result = {
        "vcpu_count": bounds(requirements.vcpus, REQUIREMENT_FLOOR),
        "memory_mib": bounds(requirements.memory_mib, REQUIREMENT_FLOOR),
        "accelerator_types": ["gpu"],
        "accelerator_count": bounds(requirements.gpu_count),
        "accelerator_manufacturers": list(requirements.gpu_manufacturers) or None,
        "accelerator_names": list(requirements.gpu_names) or None,
        "accelerator_total_memory_mib": bounds(requirements.total_gpu_memory_mib),
        "allowed_instance_types": allowed,
    }
    return {key: value for key, value in result.items() if value}


def ec2_instance_requirements(requirements: InstanceRequirementsConfig) -> dict:
    """EC2's InstanceRequirementsWithMetadata for the group's requirements, as GetSpotPlacementScores
    takes them in place of InstanceTypes (botocore's ec2 model, InstanceRequirementsWithMetadataRequest
    and InstanceRequirementsRequest; EC2 API reference, GetSpotPlacementScores; read 2026-11-28).

    VCpuCount and MemoryMiB are required there, each with a Min, where 0 means no minimum (EC2 API
    reference, VCpuCountRangeRequest and MemoryMiBRequest). No architecture is named: the group's
    launch template, not its requirements, fixes it, as for the Auto Scaling group."""
    def bounds(value, floor: int | None = None) -> dict | None:
        if value is None:
            return {"Min": floor} if floor is not None else None
        found = {key.title(): getattr(value, key) for key in ("min", "max") if getattr(value, key) is not None}
        if floor is not None:
            found.setdefault("Min", floor)
        return found

    result = {
        "VCpuCount": bounds(requirements.vcpus, 0),
        "MemoryMiB": bounds(requirements.memory_mib, 0),
        "AcceleratorTypes": ["gpu"],
        "AcceleratorCount": bounds(requirements.gpu_count),
        "AcceleratorManufacturers": list(requirements.gpu_manufacturers) or None,
        "AcceleratorNames": list(requirements.gpu_names) or None,
        "AcceleratorTotalMemoryMiB": bounds(requirements.total_gpu_memory_mib),
        "AllowedInstanceTypes": list(requirements.allowed_instance_types) or None,
        "ExcludedInstanceTypes": list(requirements.excluded_instance_types) or None,
    }
    return {"InstanceRequirements": {key: value for key, value in result.items() if value is not None}}
