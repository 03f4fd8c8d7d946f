"""Typed stack configuration: parsed once, at the edge, from Pulumi config or a stack file.

The models are split by section of the stack file, plain data: a rule within one section is a named
validator on its model; a rule that ties a section to the rest of the stack is in
`gpucloud.config.rules`, which the loader (`gpucloud.config.loader`) runs after parsing. Rules that
need AWS facts (GPU types, EFA, subnets) are in `gpucloud.lookups`.
"""

from gpucloud.config.access import AccessConfig, DataConfig
from gpucloud.config.network import NetworkConfig
from gpucloud.config.errors import NAMESPACE, ConfigError
from gpucloud.config.capacity import CapacityBlockConfig, CapacityBlockOffer, CapacityConfig, ReservationsConfig
from gpucloud.config.groups import (
    CHECKPOINT_TIMEOUT_LIMIT_SECONDS,
    CheckpointConfig,
    GroupConfig,
    HealthConfig,
    WarmPoolConfig,
)
from gpucloud.config.requirements import InstanceRequirementsConfig
from gpucloud.config.operations import AccountConfig, BackupConfig, BudgetConfig, MonitoringConfig
from gpucloud.config.scaling import (
    GpuIdleScaleIn,
    IdleShutdown,
    ScalingConfig,
    Schedule,
    StepScaling,
    TargetTracking,
)
from gpucloud.config.loader import parse_stack_config, split_namespace
from gpucloud.config.node_role import IAM_ROLE_POLICY_LIMIT
from gpucloud.config.stack import StackConfig, StackSettings
from gpucloud.config.stack_file import load_stack_file

__all__ = [
    "CHECKPOINT_TIMEOUT_LIMIT_SECONDS",
    "IAM_ROLE_POLICY_LIMIT",
    "NAMESPACE",
    "AccessConfig",
    "AccountConfig",
    "BackupConfig",
    "BudgetConfig",
    "CapacityBlockConfig",
    "CapacityBlockOffer",
    "CapacityConfig",
    "CheckpointConfig",
    "HealthConfig",
    "ConfigError",
    "DataConfig",
    "GpuIdleScaleIn",
    "GroupConfig",
    "IdleShutdown",
    "InstanceRequirementsConfig",
    "MonitoringConfig",
    "NetworkConfig",
    "ReservationsConfig",
    "WarmPoolConfig",
    "ScalingConfig",
    "Schedule",
    "StackConfig",
    "StackSettings",
    "StepScaling",
    "TargetTracking",
    "load_stack_file",
    "parse_stack_config",
    "split_namespace",
]
