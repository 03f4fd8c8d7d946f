"""Lets `python -m gpucloud.node` run the agent's command line."""

import sys

from gpucloud.node.cli import main

sys.exit(main())
