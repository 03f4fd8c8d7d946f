"""`gpucloud prices refresh`: the price catalog behind the plan's cost estimate, rebuilt from AWS."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import add_command_group

PRICES_AWS_CALL_FAILED = 3
"""Exit code of `prices refresh` when AWS refused or could not be reached (credentials, endpoint)."""


def refresh_prices(arguments: argparse.Namespace) -> int:
    """Rebuild the price catalog from the AWS Price List API (needs AWS credentials)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.pricing import (
        DEFAULT_CATALOG_PATH,
        SUPPORTED_INSTANCE_TYPES,
        SUPPORTED_REGIONS,
        PricingError,
        refresh_catalog,
    )

    output = arguments.output or DEFAULT_CATALOG_PATH
    try:
        result = refresh_catalog(
            boto3.Session(),
            output,
            arguments.regions or SUPPORTED_REGIONS,
            arguments.instance_types or SUPPORTED_INSTANCE_TYPES,
        )
    except PricingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (BotoCoreError, ClientError) as error:
        # No credentials, an endpoint that fails, a refused call: one line, as every other AWS command.
        print(f"error: reading the AWS Price List API failed: {' '.join(str(error).split())}", file=sys.stderr)
        return PRICES_AWS_CALL_FAILED
    for message in result.kept:
        print(f"warning: {message}", file=sys.stderr)
    print(f"wrote {len(result.catalog.instances)} instance prices to {output}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `prices` and its `refresh` command."""
    prices_commands = add_command_group(commands, "prices", "the price catalog behind the plan's cost estimate")
    refresh = prices_commands.add_parser(
        "refresh",
        help="rebuild the catalog from the AWS Price List API",
        epilog=f"exit codes: 0 written, 2 an unknown region or inconsistent prices, {PRICES_AWS_CALL_FAILED} an AWS "
        "call failed (credentials, permissions, network)",
    )
    refresh.add_argument("--regions", nargs="+", help="regions to refresh (default: all supported)")
    refresh.add_argument("--instance-types", nargs="+", help="instance types to refresh (default: all supported)")
    refresh.add_argument("--output", help="catalog file to write (default: the packaged catalog)")
    refresh.set_defaults(handler=refresh_prices)
