"""GPU types chosen by attributes (Auto Scaling's InstanceRequirements) instead of by name."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from gpucloud.config.fields import ConfigModel, shaped

ACCELERATOR_NAMES = ("a100", "v100", "k80", "t4", "m60", "radeon-pro-v520", "vu9p")
"""The accelerator names an Auto Scaling group's InstanceRequirements take: the AcceleratorName enum
of the Auto Scaling model (botocore/data/autoscaling/2011-01-01/service-2.json, botocore 1.44.8),
which terraform-provider-aws validates `accelerator_names` with (internal/service/autoscaling/group.go,
`enum.Validate[awstypes.AcceleratorName]`, read 2026-11-25); a test holds this list to the installed
model. EC2's own enum is longer (h100, a10g, l4, l40s, ...), but no evidence says Auto Scaling takes
those, and the provider refuses them at `pulumi preview`. Select other GPUs by totalGpuMemoryMiB and
allowedInstanceTypes (e.g. `g6.*` for L4, `p5.*` for H100)."""
ACCELERATOR_MANUFACTURERS = ("nvidia", "amd", "amazon-web-services", "xilinx")
"""The manufacturers an Auto Scaling group's InstanceRequirements take: the AcceleratorManufacturer
enum of the same model (botocore 1.44.8), which the provider validates `accelerator_manufacturers`
with in the same file (`enum.Validate[awstypes.AcceleratorManufacturer]`, read 2026-11-28). EC2's
enum adds `habana`, which Auto Scaling refuses; a test holds this list to the installed model."""


class CountRange(ConfigModel):
    min: int | None = Field(default=None, ge=0)
    """The smallest value that matches (inclusive); give min, max or both."""
    max: int | None = Field(default=None, ge=0)
    """The largest value that matches (inclusive)."""

    @model_validator(mode="after")
    def ordered(self) -> CountRange:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        return self


class InstanceRequirementsConfig(ConfigModel):
    """GPU types by attributes, for fleets (spot above all) that should take whatever matches: the
    plan resolves them to the region's matching types and shows them."""

    gpu_count: CountRange = Field(default_factory=lambda: CountRange(min=1))
    """GPUs per instance, as {min, max}; by default at least one."""
    gpu_manufacturers: list[Literal[ACCELERATOR_MANUFACTURERS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["nvidia"])
    """The GPU manufacturers a type may have, of those Auto Scaling takes (not habana, which only EC2 knows)."""
    gpu_names: list[Literal[ACCELERATOR_NAMES]] = Field(default_factory=list)  # type: ignore[valid-type]
    """GPU names to match, of the few Auto Scaling takes (a100, v100, k80, t4, m60, radeon-pro-v520, vu9p); select
    others (H100, L4, A10G) by totalGpuMemoryMiB and allowedInstanceTypes. Empty: any."""
    total_gpu_memory_mib: CountRange | None = Field(default=None, alias="totalGpuMemoryMiB")
    """The memory of all an instance's GPUs together, in MiB, as {min, max}."""
    vcpus: CountRange | None = None
    """vCPUs per instance, as {min, max}."""
    memory_mib: CountRange | None = Field(default=None, alias="memoryMiB")
    """The instance's memory (RAM) in MiB, as {min, max}."""
    allowed_instance_types: list[Annotated[str, shaped(r"[a-z0-9*][a-z0-9.*-]*", "use a type or a pattern such as g6e.*", 30)]] = Field(
        default_factory=list, max_length=400)
    """Only these types or patterns (`g6e.*`, `p5.*`) may match; not with excludedInstanceTypes."""
    excluded_instance_types: list[Annotated[str, shaped(r"[a-z0-9*][a-z0-9.*-]*", "use a type or a pattern such as g4dn.*", 30)]] = Field(
        default_factory=list, max_length=400)
    """Types or patterns (`g4dn.*`) that never match; not with allowedInstanceTypes."""

    @model_validator(mode="after")
    def allowed_or_excluded(self) -> InstanceRequirementsConfig:
        if self.allowed_instance_types and self.excluded_instance_types:
            raise ValueError("give allowedInstanceTypes or excludedInstanceTypes, not both (Auto Scaling takes one; "
                             "EC2 API reference, InstanceRequirements, read 2026-11-25)")
        return self
