"""groups[].image and data/image_software.json: what the default image ships, which features rely on
what, the refusal of a feature the image lacks, and the plan's per-group statement of it."""

from __future__ import annotations

import typing

import pytest

from gpucloud.config.errors import ConfigError
from gpucloud.config.image import Software, default_image, image_catalog
from gpucloud.config.rules.image import reliances
from gpucloud.plan.image_software import image_software, image_software_line
from gpucloud.plan.model import Plan
from support import minimal_config, settings_for

OWN_IMAGE = "ami-0123456789abcdef0"


def group(**changes):
    return {**minimal_config()["groups"][0], **changes}


def test_catalog_cites_release_notes_and_speaks_the_config_vocabulary():
    catalog = image_catalog()
    vocabulary = set(typing.get_args(Software))
    assert set(catalog["software"]) == vocabulary
    image = default_image()
    assert image["read"] == "2026-11-28"
    assert all(note["url"].startswith("https://docs.") for note in image["releaseNotes"])
    assert set(image["provides"]) | set(image["lacks"]) <= vocabulary
    assert not set(image["provides"]) & set(image["lacks"])
    assert image["provides"]["python3"]["version"] == "3.10"
    assert {"docker", "nvidiaContainerToolkit", "lustreClient", "efa", "ofiNccl"} <= set(image["provides"])
    assert "mountS3" in image["lacks"] and "pythonVenv" in image["lacks"]


def test_features_rely_on_the_software_the_node_code_uses():
    config = minimal_config(storage={"lustre": {}, "s3Mount": {}}, groups=[group(
        multiNode=True, instanceTypes=["p5.48xlarge"],
        services={"jupyter": {}, "containers": [{"name": "cpu", "image": "nginx:1.27", "gpus": 0}]})])
    needs = {(need.feature, need.software): need.fallback for need in reliances(settings_for(config).config, 0)}
    assert needs[("node agent", "python3")] is None
    assert needs[("storage.lustre", "lustreClient")] is None
    assert needs[("storage.s3Mount.install", "mountS3")] == "downloaded at boot (install: download)"
    assert needs[("groups[0].multiNode", "efa")] is None and ("groups[0].multiNode", "ofiNccl") in needs
    assert needs[("groups[0].services.containers", "docker")] is None
    assert ("groups[0].services.containers", "nvidiaContainerToolkit") not in needs  # gpus: 0
    assert "python3-venv" in needs[("groups[0].services.jupyter.install", "pythonVenv")]


def test_container_jobs_rely_on_docker_with_gpus():
    config = settings_for(minimal_config(groups=[group(
        jobs={"ecrRepositories": ["123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer"]})])).config
    needs = {(need.feature, need.software) for need in reliances(config, 0)}
    assert {("groups[0].jobs.ecrRepositories", "docker"), ("groups[0].jobs.ecrRepositories", "nvidiaContainerToolkit")} <= needs


def test_s3_mount_from_the_default_image_is_refused_naming_the_key():
    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(storage={"s3Mount": {"install": "ami"}}))
    [(key, message)] = error.value.problems
    assert key == "gpu-cloud:storage.s3Mount.install"
    assert "mountS3" in message and "default image" in message and "install: download" in message


def test_s3_mount_downloads_by_default():
    settings = settings_for(minimal_config(storage={"s3Mount": {}}))
    assert settings.config.storage.s3_mount.install == "download"


def test_own_image_asserted_without_efa_refuses_multi_node():
    config = minimal_config(groups=[group(amiId=OWN_IMAGE, multiNode=True, instanceTypes=["p5.48xlarge"],
                                          image={"provides": ["python3", "docker"]})])
    with pytest.raises(ConfigError) as error:
        settings_for(config)
    [(key, message)] = error.value.problems
    assert key == "gpu-cloud:groups[0].multiNode"
    assert "efa and ofiNccl" in message and OWN_IMAGE in message


def test_own_image_asserted_without_python_refuses_every_node():
    with pytest.raises(ConfigError, match=r"groups\[0\]\.image\.provides says amiId"):
        settings_for(minimal_config(groups=[group(amiId=OWN_IMAGE, image={"provides": ["docker"]})]))


def test_image_provides_needs_an_image_of_your_own():
    with pytest.raises(ConfigError, match=r"gpu-cloud:groups\[0\]\.image\.provides: asserts what an image of your own"):
        settings_for(minimal_config(groups=[group(image={"provides": ["python3"]})]))


def test_own_image_without_assertion_is_not_checked_on_one_line_and_never_refused():
    config = settings_for(minimal_config(storage={"s3Mount": {"install": "ami"}}, groups=[group(
        amiId=OWN_IMAGE, multiNode=True, instanceTypes=["p5.48xlarge"])])).config
    [entry] = image_software(config)
    assert entry["checked"] is False
    assert {item["source"] for item in entry["reliesOn"]} == {"not checked"}
    line = image_software_line(entry)
    assert "\n" not in line
    assert line.startswith(f"workers: amiId {OWN_IMAGE}: not checked") and "groups[0].image.provides" in line
    assert "mountS3" in line and "efa" in line


def test_plan_says_where_each_feature_gets_its_software():
    config = settings_for(minimal_config(storage={"lustre": {}, "s3Mount": {}}, groups=[group(
        services={"tensorboard": {}}), group(name="own", amiId=OWN_IMAGE, image={"provides": ["python3", "lustreClient"]})])).config
    default, own = image_software(config)
    assert default["checked"] and default["releaseNotesRead"] == "2026-11-28"
    line = image_software_line(default)
    assert "storage.lustre -> lustreClient (image)" in line
    assert "storage.s3Mount.install -> mountS3 (downloaded at boot (install: download))" in line
    assert "groups[0].services.tensorboard.install -> pythonVenv (apt-get install python3-venv" in line
    assert own["asserted"] == ["python3", "lustreClient"]
    assert "node agent -> python3 (asserted)" in image_software_line(own)


def test_plan_json_carries_image_software():
    entries = image_software(settings_for(minimal_config()).config)
    plan = Plan(project="gpu-cloud", stack="demo", region="us-east-1", resources=[], outputs={}, image_software=entries)
    assert plan.to_preview_json()["imageSoftware"] == entries
