"""CostBudget: the project's monthly AWS Budgets cost budget, filtered on its Project tag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

ALERTS = (
    ("ACTUAL", 80),
    ("ACTUAL", 100),
    ("FORECASTED", 100),
)
"""(notification type, percent of the limit): warn early on actual spend, and on the forecast."""


@dataclass(frozen=True)
class CostBudgetArgs:
    project: str
    """The `Project` tag the budget filters on."""
    monthly_usd: float
    """The monthly cost limit in USD; notifications go out at its thresholds."""
    owner_email: str
    """Who gets the budget's e-mail notifications."""
    topic_arn: pulumi.Input[str]
    """The SNS topic the budget also notifies (the project's alerts topic)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""
    name_base: str | None = None
    """What the budget's name is built from (unique per account); the project when not given."""


class CostBudget(pulumi.ComponentResource):
    """A monthly cost budget on the `Project` cost-allocation tag, alerting the topic and the owner.

    The `Project` tag must be activated as a cost-allocation tag in the billing console once per
    account, or the filter matches nothing.
    """

    budget_name: pulumi.Output[str]
    """Name of the budget."""

    def __init__(self, name: str, args: CostBudgetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:CostBudget", name, None, opts)
        self.budget = aws.budgets.Budget(
            f"{name}-monthly",
            name=f"gpu-cloud-{args.name_base or args.project}-monthly",
            budget_type="COST",
            time_unit="MONTHLY",
            limit_amount=f"{args.monthly_usd:.2f}",
            limit_unit="USD",
            cost_filters=[{"name": "TagKeyValue", "values": [f"user:Project${args.project}"]}],
            notifications=[
                {
                    "notification_type": kind,
                    "comparison_operator": "GREATER_THAN",
                    "threshold": percent,
                    "threshold_type": "PERCENTAGE",
                    "subscriber_email_addresses": [args.owner_email],
                    "subscriber_sns_topic_arns": [args.topic_arn],
                }
                for kind, percent in ALERTS
            ],
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.budget_name = self.budget.name
        self.register_outputs({"budgetName": self.budget_name})
