"""What platform teams that run Prometheus and Grafana get for a stack: alert and recording rules
over the node agent's readings, the alert manager definition that sends the alerts to the project's
topic, and Grafana dashboards (`dashboards`, built with grafana-foundation-sdk), generated from the stack config."""

from gpucloud.observability.alerting import alert_manager_definition
from gpucloud.observability.rules import rule_file, rule_file_text

__all__ = ["alert_manager_definition", "rule_file", "rule_file_text"]
