"""Persistent volume attach-by-tag and EBS device lookup, against moto's EC2 and a fake /sys."""

from __future__ import annotations

from itertools import count

import pytest
from gpucloud.node.config import NodeConfig
from gpucloud.node.volumes import VolumeError, attach_persistent_volume, find_local_device, local_device_for
from node_fakes import REGION, ZONE, aws_client

TAG_KEY = "gpucloud:persistent-volume"
TAG_VALUE = "ml/train"


@pytest.fixture
def ec2(aws):
    return aws_client("ec2")


@pytest.fixture
def host(tmp_path):
    """A fake /sys/block and /dev; `attach(volume_id)` makes a volume appear as an NVMe disk."""

    class Host:
        sys_block = tmp_path / "sys" / "block"
        dev = tmp_path / "dev"
        disks = count(1)

        def attach(self, volume_id: str) -> str:
            name = f"nvme{next(self.disks)}n1"
            (self.sys_block / name / "device").mkdir(parents=True)
            # The controller pads its serial with spaces, as the kernel shows it.
            (self.sys_block / name / "device" / "serial").write_text(
                volume_id.replace("-", "").ljust(20) + "\n"
            )
            return str(self.dev / name)

    Host.sys_block.mkdir(parents=True)
    Host.dev.mkdir()
    return Host()


def launch_instance(ec2, **extra) -> str:
    return ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, Placement={"AvailabilityZone": ZONE}, **extra
    )["Instances"][0]["InstanceId"]


def tagged_volume(ec2, zone: str = ZONE, value: str = TAG_VALUE) -> str:
    return ec2.create_volume(
        AvailabilityZone=zone,
        Size=100,
        TagSpecifications=[{"ResourceType": "volume", "Tags": [{"Key": TAG_KEY, "Value": value}]}],
    )["VolumeId"]


def attach(config, stub, host, sleep=lambda seconds: None, clock=None):
    return attach_persistent_volume(
        config,
        stub.client(),
        client_factory=lambda service, region: aws_client(service, region),
        sleep=sleep,
        clock=clock or count().__next__,
        sys_block=host.sys_block,
        dev=host.dev,
    )


def persist_config(**changes) -> NodeConfig:
    return NodeConfig(
        region=REGION,
        persistent_volume_tag_key=TAG_KEY,
        persistent_volume_tag_value=TAG_VALUE,
        volume_wait_s=30,
    ).replace(**changes)


def attachments(ec2, volume_id: str) -> list[tuple[str, str]]:
    volume = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
    return [(item["InstanceId"], item["Device"]) for item in volume["Attachments"]]


@pytest.mark.node_aws_calls("persistentVolume")
def test_available_volume_in_this_zone_is_attached_and_located(ec2, metadata_stub, host):
    instance_id = launch_instance(ec2)
    volume_id = tagged_volume(ec2)
    tagged_volume(ec2, zone="us-east-1b")
    metadata_stub.serve_instance(instance_id)
    expected_device = host.attach(volume_id)

    device = attach(persist_config(), metadata_stub, host)

    assert device == expected_device
    assert attachments(ec2, volume_id) == [(instance_id, "/dev/sdp")]


@pytest.mark.node_aws_calls("persistentVolume")
def test_volume_held_by_a_predecessor_is_waited_for(ec2, metadata_stub, host):
    predecessor = launch_instance(ec2)
    instance_id = launch_instance(ec2)
    volume_id = tagged_volume(ec2)
    ec2.attach_volume(VolumeId=volume_id, InstanceId=predecessor, Device="/dev/sdp")
    metadata_stub.serve_instance(instance_id)
    host.attach(volume_id)
    sleeps: list[float] = []

    def predecessor_terminates(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:
            ec2.detach_volume(VolumeId=volume_id, InstanceId=predecessor)

    attach(persist_config(), metadata_stub, host, sleep=predecessor_terminates)

    assert attachments(ec2, volume_id) == [(instance_id, "/dev/sdp")]
    assert len(sleeps) >= 2


@pytest.mark.node_aws_calls("persistentVolume")
def test_volume_that_never_frees_up_fails_after_the_wait(ec2, metadata_stub, host):
    instance_id = launch_instance(ec2)
    volume_id = tagged_volume(ec2)
    ec2.attach_volume(VolumeId=volume_id, InstanceId=launch_instance(ec2), Device="/dev/sdp")
    metadata_stub.serve_instance(instance_id)

    with pytest.raises(VolumeError) as error:
        attach(persist_config(volume_wait_s=10), metadata_stub, host)

    assert f"{volume_id} in-use" in str(error.value)


@pytest.mark.node_aws_calls("persistentVolume")
def test_volume_already_attached_after_reboot_is_reused(ec2, metadata_stub, host):
    instance_id = launch_instance(ec2)
    volume_id = tagged_volume(ec2)
    ec2.attach_volume(VolumeId=volume_id, InstanceId=instance_id, Device="/dev/sdp")
    metadata_stub.serve_instance(instance_id)
    expected_device = host.attach(volume_id)

    assert attach(persist_config(), metadata_stub, host) == expected_device
    assert attachments(ec2, volume_id) == [(instance_id, "/dev/sdp")]


@pytest.mark.node_aws_calls("persistentVolume")
def test_no_tagged_volume_in_this_zone_is_an_error(ec2, metadata_stub, host):
    metadata_stub.serve_instance(launch_instance(ec2))
    tagged_volume(ec2, zone="us-east-1b")

    with pytest.raises(VolumeError) as error:
        attach(persist_config(), metadata_stub, host)

    assert str(error.value) == f"no EBS volume tagged {TAG_KEY}={TAG_VALUE} in {ZONE}"


@pytest.mark.node_aws_calls("dataVolume")
def test_data_disk_is_found_by_its_volume_serial(ec2, metadata_stub, host):
    instance_id = launch_instance(
        ec2, BlockDeviceMappings=[{"DeviceName": "/dev/sdf", "Ebs": {"VolumeSize": 200}}]
    )
    metadata_stub.serve_instance(instance_id)
    mappings = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0][
        "BlockDeviceMappings"
    ]
    data_volume = next(item["Ebs"]["VolumeId"] for item in mappings if item["DeviceName"] == "/dev/sdf")
    host.attach(tagged_volume(ec2))
    expected_device = host.attach(data_volume)

    device = local_device_for(
        "/dev/sdf",
        NodeConfig(region=REGION),
        metadata_stub.client(),
        client_factory=lambda service, region: aws_client(service, region),
        sys_block=host.sys_block,
        dev=host.dev,
    )

    assert device == expected_device


def test_device_falls_back_to_udev_links_then_the_attachment_name(host):
    by_id = host.dev / "disk" / "by-id"
    by_id.mkdir(parents=True)
    (host.dev / "nvme3n1").touch()
    (by_id / "nvme-Amazon_Elastic_Block_Store_vol0aaa").symlink_to(host.dev / "nvme3n1")
    (host.dev / "xvdf").touch()

    assert find_local_device("vol-0aaa", "/dev/sdf", host.sys_block, host.dev) == host.dev / "nvme3n1"
    assert find_local_device("vol-0bbb", "/dev/sdf", host.sys_block, host.dev) == host.dev / "xvdf"
    assert find_local_device("vol-0bbb", "/dev/sdg", host.sys_block, host.dev) is None
