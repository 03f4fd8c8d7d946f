"""SNS topics, topic policies and subscriptions."""

from __future__ import annotations

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, resource


@resource("aws:sns/topic:Topic")
def create_topic(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    require_key(account, inputs.get("kmsMasterKeyId"), request.name)
    name = request.physical_name()
    arn = account.client("sns").create_topic(
        **drop_none(
            {
                "Name": name,
                "Attributes": drop_none({"KmsMasterKeyId": inputs.get("kmsMasterKeyId"), "DisplayName": inputs.get("displayName")}),
                "Tags": aws_tags(inputs.get("tags")),
            }
        )
    )["TopicArn"]
    return Created(id=arn, outputs={"arn": arn, "name": name, "owner": account.account_id})


@resource("aws:sns/topicPolicy:TopicPolicy")
def set_topic_policy(account: Account, request: ResourceRequest) -> Created:
    arn = request.inputs["arn"]
    account.client("sns").set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=request.inputs["policy"])
    return Created(id=arn, outputs={"owner": account.account_id})


@resource("aws:sns/topicSubscription:TopicSubscription")
def subscribe(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    arn = account.client("sns").subscribe(
        TopicArn=inputs["topic"], Protocol=inputs["protocol"], Endpoint=inputs["endpoint"], ReturnSubscriptionArn=True
    )["SubscriptionArn"]
    return Created(id=arn, outputs={"arn": arn})
