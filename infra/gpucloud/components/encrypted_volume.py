"""EncryptedVolume: a persistent gp3 volume that outlives the instances using it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

ATTACH_TAG = "gpu-cloud:attach-to"
"""Tag the node looks for at boot to find the volume it must attach."""
BACKUP_TAG = "gpu-cloud:backup"
"""Tag AWS Backup selects volumes by; its value is the project."""


@dataclass(frozen=True)
class EncryptedVolumeArgs:
    availability_zone: str
    """The zone of the volume: the node that attaches it runs there."""
    size_gib: int
    """Size of the gp3 volume in GiB."""
    kms_key_arn: pulumi.Input[str]
    """The customer-managed key the volume is encrypted with."""
    attach_to: str
    """Value of the `gpu-cloud:attach-to` tag: the Auto Scaling group whose node attaches it."""
    backup_selection: str | None = None
    """Value of the `gpu-cloud:backup` tag (the project) when the volume is to be backed up."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""
    iops: int = 3000
    """Provisioned IOPS of the gp3 volume (3000 is gp3's baseline)."""
    throughput_mibps: int = 125
    """Provisioned throughput of the gp3 volume in MiB/s (125 is gp3's baseline)."""


class EncryptedVolume(pulumi.ComponentResource):
    """A gp3 EBS volume encrypted with the project key, protected and retained on delete."""

    volume_id: pulumi.Output[str]
    """EBS volume id."""
    volume_arn: pulumi.Output[str]
    """EBS volume ARN."""
    availability_zone: pulumi.Output[str]
    """The zone the volume (and so its instance) lives in."""

    def __init__(self, name: str, args: EncryptedVolumeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:EncryptedVolume", name, None, opts)
        self.volume = aws.ebs.Volume(
            f"{name}-volume",
            availability_zone=args.availability_zone,
            size=args.size_gib,
            type="gp3",
            iops=args.iops,
            throughput=args.throughput_mibps,
            encrypted=True,
            kms_key_id=args.kms_key_arn,
            tags={
                **args.tags,
                "Name": name,
                ATTACH_TAG: args.attach_to,
                **({BACKUP_TAG: args.backup_selection} if args.backup_selection else {}),
            },
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        self.volume_id = self.volume.id
        self.volume_arn = self.volume.arn
        self.availability_zone = self.volume.availability_zone
        self.register_outputs(
            {"volumeId": self.volume_id, "volumeArn": self.volume_arn, "availabilityZone": self.availability_zone}
        )
