"""`gpucloud run --image` takes a pinned image only, as a container service does
(`services.containers[].image`): each node of a job pulls the image when the job reaches it, and a
node that joins on a resume pulls it again, so a tag that moves could split one job over two images."""

from __future__ import annotations

import pytest

from gpucloud.ops.jobs import JobError, new_job
from support import minimal_config, settings_for

SETTINGS = settings_for(minimal_config(groups=[{"name": "trainers", "instanceTypes": ["g5.xlarge"], "minSize": 0,
                                                "maxSize": 2, "multiNode": True}]))


@pytest.mark.parametrize(("image", "reason"), [
    ("nvcr.io/nvidia/pytorch:latest", "names the tag latest"),
    ("nvcr.io/nvidia/pytorch", "names no tag (Docker pulls latest)"),
    ("localhost:5000/team/train", "names no tag (Docker pulls latest)"),
])
def test_run_refuses_an_image_whose_tag_moves(image, reason):
    with pytest.raises(JobError) as error:
        new_job(SETTINGS, "trainers", ["train"], nodes=2, image=image)

    message = str(error.value)
    assert message.startswith(f"--image {image} {reason}, which moves: a node that joins the job on a resume")
    assert message.endswith("pin a version tag ([registry/]repository:tag) or a digest "
                            "([registry/]repository@sha256:<digest>)") and "\n" not in message


def test_run_takes_a_version_tag_or_a_digest():
    for image in ("nvcr.io/nvidia/pytorch:24.10-py3", "localhost:5000/team/train:7", f"nvcr.io/nvidia/pytorch@sha256:{'a' * 64}"):
        assert new_job(SETTINGS, "trainers", ["train"], image=image).image == image


def test_the_command_refuses_latest_with_exit_2_and_one_line_before_any_call(capsys):
    from gpucloud.cli import main

    assert main(["run", "--stack", "vision-train", "--group", "trainers", "--image", "nvcr.io/nvidia/pytorch:latest",
                 "--", "python", "train.py"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --image nvcr.io/nvidia/pytorch:latest names the tag latest") and err.count("\n") == 1
