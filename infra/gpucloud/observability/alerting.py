"""Where the stack's Prometheus alerts go: an alert manager definition for Amazon Managed Service
for Prometheus that sends every alert to the project's SNS topic (the owner is subscribed).

AMP takes Alertmanager's own configuration under `alertmanager_config`, with SNS as the receiver
and SigV4 in the workspace's region (AMP user guide, "Create an alert manager configuration ... to
send alerts to Amazon SNS"; read 2026-11-25). `amtool check-config` proves the inner document in
the tests.
"""

from __future__ import annotations

from typing import Any

import yaml

RECEIVER = "project-topic"
GROUP_BY = ("alertname", "group")
"""One notification per alert and Auto Scaling group, whatever the number of nodes or GPUs firing."""


def alertmanager_config(topic_arn: str, region: str) -> dict[str, Any]:
    """Alertmanager's configuration: critical alerts repeat every hour while they fire, the rest
    every four; a critical alert of a node silences its warnings and notes (a GPU fallen off the
    bus also reads as missing, idle and cold: one page, not four)."""
    receiver = {"name": RECEIVER, "sns_configs": [{"topic_arn": topic_arn, "sigv4": {"region": region}}]}
    return {
        "route": {
            "receiver": RECEIVER,
            "group_by": list(GROUP_BY),
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [{"receiver": RECEIVER, "matchers": ['severity="critical"'], "repeat_interval": "1h"}],
        },
        "inhibit_rules": [
            {
                "source_matchers": ['severity="critical"'],
                "target_matchers": ['severity=~"warning|info"'],
                "equal": ["instance_id"],
            }
        ],
        "receivers": [receiver],
    }


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks, as AMP's examples show the inner configuration."""


_BlockDumper.add_representer(
    str, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)
)


def alert_manager_definition(topic_arn: str, region: str) -> str:
    """The AMP alert manager definition document (YAML, the inner configuration as one string)."""
    inner = yaml.safe_dump(alertmanager_config(topic_arn, region), sort_keys=False)
    return yaml.dump({"alertmanager_config": inner}, Dumper=_BlockDumper, sort_keys=False)
