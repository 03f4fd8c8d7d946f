"""`python -m gpucloud.cli`: the `gpucloud` command."""

import sys

from gpucloud.cli import main

sys.exit(main())
