"""What platform teams that run Prometheus and Grafana get for a stack: alert and recording rules
over the node agent's readings, generated from the stack config."""

from gpucloud.observability.rules import rule_file

__all__ = ["rule_file"]
