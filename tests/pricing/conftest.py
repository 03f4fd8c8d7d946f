import json
from pathlib import Path

import pytest

from gpucloud.config import parse_stack_config

CATALOG_FILE = Path(__file__).resolve().parents[2] / "infra" / "gpucloud" / "data" / "prices.json"


@pytest.fixture(scope="session")
def rows():
    """The catalog file read as plain JSON, so expected figures do not go through the code under test."""
    document = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))

    class Rows:
        def hourly(self, instance_type, region):
            (price,) = [row["usdPerHour"] for row in document["instances"]
                        if row["instanceType"] == instance_type and row["region"] == region]
            return price

        def gp3(self, region):
            (row,) = [row for row in document["storage"] if row["region"] == region]
            return row

        def gp3_per_gb_month(self, region):
            return self.gp3(region)["usdPerGbMonth"]

        def kms_key_month(self, region):
            (price,) = [row["usdPerKeyMonth"] for row in document["kms"] if row["region"] == region]
            return price

        def network(self, region):
            (row,) = [row for row in document["network"] if row["region"] == region]
            return row

        def spot_discount(self, family, region):
            (discount,) = [row["discount"] for row in document["spotDiscounts"]
                           if row["family"] == family and row["region"] == region]
            return discount

    return Rows()


@pytest.fixture
def stack_config():
    def build(*groups, region="us-east-1", network=None):
        """Groups in listed subnets by default, so the figures are the groups' alone (a created
        network adds its NAT and endpoint hours: `network={}`)."""
        values = {"project": "vision", "owner": "ml-team@example.com", "costCenter": "cc-42", "budget": {"monthlyUsd": 100000}, "groups": list(groups),
                  "network": {"subnetIds": ["subnet-0123456789abcdef0"]} if network is None else network}
        return parse_stack_config(values, stack="dev", source="Pulumi.dev.yaml", region=region).config

    return build
