"""AWS Budgets cost budgets with their notifications and subscribers."""

from __future__ import annotations

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, resource


@resource("aws:budgets/budget:Budget")
def create_budget(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    account_id = inputs.get("accountId") or account.account_id
    name = request.physical_name()
    notifications = []
    for notification in inputs.get("notifications", []):
        subscribers = [{"SubscriptionType": "EMAIL", "Address": email} for email in notification.get("subscriberEmailAddresses", [])]
        subscribers += [{"SubscriptionType": "SNS", "Address": arn} for arn in notification.get("subscriberSnsTopicArns", [])]
        notifications.append(
            {
                "Notification": {
                    "NotificationType": notification["notificationType"],
                    "ComparisonOperator": notification["comparisonOperator"],
                    "Threshold": float(notification["threshold"]),
                    "ThresholdType": notification["thresholdType"],
                },
                "Subscribers": subscribers,
            }
        )
    account.client("budgets").create_budget(
        AccountId=account_id,
        Budget=drop_none(
            {
                "BudgetName": name,
                "BudgetType": inputs["budgetType"],
                "TimeUnit": inputs["timeUnit"],
                "BudgetLimit": {"Amount": inputs["limitAmount"], "Unit": inputs.get("limitUnit", "USD")},
                "CostFilters": {item["name"]: item["values"] for item in inputs.get("costFilters", [])},
            }
        ),
        NotificationsWithSubscribers=notifications,
        # The provider sends the budget's tags with CreateBudget (ResourceTags), so they are checked too.
        **({"ResourceTags": aws_tags(inputs["tags"])} if inputs.get("tags") else {}),
    )
    return Created(
        id=f"{account_id}:{name}",
        outputs={"name": name, "accountId": account_id, "arn": f"arn:aws:budgets::{account_id}:budget/{name}"},
    )


def budget_subscribers(account: Account, budget_name: str) -> dict[tuple[str, float], list[dict[str, str]]]:
    """Subscribers per (notification type, threshold). moto stores them but does not implement
    DescribeSubscribersForNotification, so this reads moto's budgets backend directly."""
    from moto.budgets.models import budgets_backends

    budget = budgets_backends[account.account_id]["aws"].budgets[account.account_id][budget_name]
    return {
        (notification.details["NotificationType"], float(notification.details["Threshold"])): list(notification.subscribers)
        for notification in budget.notifications
    }
