"""A team teaches the engine a resource type from its own code; unknown types never pass unchecked."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest

from gpucloud.testing import (
    Account,
    Created,
    ResourceRequest,
    UnsupportedResourceError,
    register_invoke,
    register_resource,
    run_program,
)
from gpucloud.testing.registry import INVOKES, RESOURCES

QUEUE = "aws:sqs/queue:Queue"
TAGS = {"Project": "team", "Owner": "team@example.com", "CostCenter": "cc-1"}


@pytest.fixture
def handlers_restored():
    """Registrations are process-wide; each test leaves the engine's tables as it found them."""
    resources, invokes = dict(RESOURCES), dict(INVOKES)
    yield
    RESOURCES.clear()
    RESOURCES.update(resources)
    INVOKES.clear()
    INVOKES.update(invokes)


def queue_program() -> None:
    queue = aws.sqs.Queue("jobs", tags=TAGS)
    pulumi.export("queueUrl", queue.url)


def apply_queue(account: Account, request: ResourceRequest) -> Created:
    sqs = account.client("sqs")
    url = sqs.create_queue(QueueName=request.physical_name(), tags=request.inputs.get("tags") or {})["QueueUrl"]
    return Created(id=url, outputs={"url": url})


def test_an_unknown_resource_type_fails_the_run_naming_it(account):
    with pytest.raises(UnsupportedResourceError, match="aws:sqs/queue:Queue") as error:
        run_program(queue_program, account)

    assert error.value.token == QUEUE
    assert "register_resource" in str(error.value)


def test_a_registered_handler_applies_the_type_to_the_moto_account(account, handlers_restored):
    register_resource(QUEUE)(apply_queue)

    deployment = run_program(queue_program, account)

    urls = account.client("sqs").list_queues()["QueueUrls"]
    assert deployment.outputs["queueUrl"] in urls and len(urls) == 1
    assert account.client("sqs").list_queue_tags(QueueUrl=urls[0])["Tags"] == TAGS
    assert deployment.unvalidated == []


def test_a_type_with_a_handler_is_not_replaced_by_accident(handlers_restored):
    register_resource(QUEUE)(apply_queue)

    with pytest.raises(ValueError, match="already has a handler"):
        register_resource(QUEUE)(lambda account, request: Created(id="x"))
    with pytest.raises(ValueError, match="already has a handler"):
        register_resource("aws:ebs/volume:Volume")(apply_queue)
    register_resource(QUEUE, replace=True)(apply_queue)
    assert RESOURCES[QUEUE] is apply_queue


def test_a_token_that_is_not_a_pulumi_type_is_refused():
    with pytest.raises(ValueError, match="not a Pulumi resource type token"):
        register_resource("sqs queue")
    with pytest.raises(ValueError, match="not a Pulumi invoke token"):
        register_invoke("getQueue")


def test_a_registered_invoke_answers_the_data_source(account, handlers_restored):
    @register_invoke("aws:sqs/getQueue:getQueue")
    def get_queue(account: Account, arguments: dict) -> dict:
        url = account.client("sqs").get_queue_url(QueueName=arguments["name"])["QueueUrl"]
        return {"name": arguments["name"], "url": url, "arn": f"arn:aws:sqs:us-east-1:123456789012:{arguments['name']}"}

    def program() -> None:
        pulumi.export("url", aws.sqs.get_queue(name="existing").url)

    account.client("sqs").create_queue(QueueName="existing")
    deployment = run_program(program, account)

    assert deployment.outputs["url"].endswith("/existing")


def test_recording_unknown_types_lists_them_as_not_validated(account):
    deployment = run_program(queue_program, account, record_unknown_types=True)

    (queue,) = deployment.unvalidated
    assert queue.type == QUEUE and "no handler" in queue.note
    assert account.client("sqs").list_queues().get("QueueUrls", []) == []
