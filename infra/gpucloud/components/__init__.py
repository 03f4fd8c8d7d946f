"""The Pulumi components gpu-cloud is made of, one module each, named for what it provisions.

`ProjectEnvironment` wires the others together for one stack; teams import any of them into their
own programs (`from gpucloud import GpuInstanceGroup, GpuInstanceGroupArgs`).
"""

from gpucloud.components.agent_artifacts import AgentArtifacts, AgentArtifactsArgs
from gpucloud.components.autoscaling import GpuAutoscaling, GpuAutoscalingArgs
from gpucloud.components.cost_budget import CostBudget, CostBudgetArgs
from gpucloud.components.encrypted_volume import EncryptedVolume, EncryptedVolumeArgs
from gpucloud.components.encryption_key import EncryptionKey, EncryptionKeyArgs
from gpucloud.components.environment import ProjectEnvironment, ProjectEnvironmentArgs
from gpucloud.components.gpu_group import GpuInstanceGroup, GpuInstanceGroupArgs
from gpucloud.components.grafana_workspace import GrafanaWorkspace, GrafanaWorkspaceArgs
from gpucloud.components.inference_endpoint import InferenceEndpoint, InferenceEndpointArgs
from gpucloud.components.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpucloud.components.network import GpuNetwork, GpuNetworkArgs
from gpucloud.components.node_services import NodeServices, NodeServicesArgs
from gpucloud.components.prometheus_workspace import PrometheusWorkspace, PrometheusWorkspaceArgs
from gpucloud.components.s3_access import S3PrefixAccess, S3PrefixAccessArgs
from gpucloud.components.security_group import GpuSecurityGroup, GpuSecurityGroupArgs
from gpucloud.components.volume_backup import VolumeBackup, VolumeBackupArgs

__all__ = [
    "AgentArtifacts",
    "AgentArtifactsArgs",
    "CostBudget",
    "CostBudgetArgs",
    "EncryptedVolume",
    "EncryptedVolumeArgs",
    "EncryptionKey",
    "EncryptionKeyArgs",
    "GpuAutoscaling",
    "GpuAutoscalingArgs",
    "GpuInstanceGroup",
    "GpuInstanceGroupArgs",
    "GpuMonitoring",
    "GpuMonitoringArgs",
    "GpuNetwork",
    "GpuNetworkArgs",
    "GpuSecurityGroup",
    "GpuSecurityGroupArgs",
    "GrafanaWorkspace",
    "GrafanaWorkspaceArgs",
    "InferenceEndpoint",
    "InferenceEndpointArgs",
    "NodeServices",
    "NodeServicesArgs",
    "ProjectEnvironment",
    "ProjectEnvironmentArgs",
    "PrometheusWorkspace",
    "PrometheusWorkspaceArgs",
    "S3PrefixAccess",
    "S3PrefixAccessArgs",
    "VolumeBackup",
    "VolumeBackupArgs",
]
