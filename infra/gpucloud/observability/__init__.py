"""What platform teams that run Prometheus and Grafana get for a stack: alert and recording rules
over the node agent's readings, and Grafana dashboards (`dashboards`, which needs the plan extra's
grafana-foundation-sdk), generated from the stack config."""

from gpucloud.observability.rules import rule_file

__all__ = ["rule_file"]
