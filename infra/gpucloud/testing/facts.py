"""Account facts: what a stack reads from a real account, written down so an offline plan runs the
same checks a real `pulumi preview` runs.

A facts file (YAML or JSON) lists the EC2 quotas, the VPC and subnets the stack names (zones,
CIDRs, route tables and their routes, endpoints), pinned AMIs, the service-linked roles and the
data bucket (region, owner, encryption; without `buckets`, one not in moto is not known).
`seed_account` creates them in the moto account under their real ids before the program runs;
what the file leaves out is looked up in moto as usual (and is then reported missing), except the
service-linked roles, which are then not known. What a named Prometheus workspace holds is not
seeded: the offline plan creates the stack's own namespace and definition afresh, and its rule
reads the facts (`FactsLookups`), knowing the stack's own from another's.
`gpucloud account snapshot` writes the file from a real account, like a lock file.

The models are `facts_models`, the seeding `facts_seed`; their names are importable from here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from gpucloud.lookups.facts import Bucket, Certificate, PrometheusWorkspaceContents
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.testing.facts_keys import reason
from gpucloud.testing.facts_models import (  # noqa: F401 (the facts' names, importable from here)
    FACTS_STALE_AFTER_DAYS,
    AccountFacts,
    FactsError,
)
from gpucloud.testing.facts_seed import seed_account  # noqa: F401 (importable from here)
from gpucloud.testing.named_facts import facts_certificate


def load_facts(path: str | Path) -> AccountFacts:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return AccountFacts.model_validate(document or {})
    except FileNotFoundError:
        raise FactsError(f"account facts {path} do not exist") from None
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        raise FactsError(f"account facts {path} are not valid YAML/JSON: {error}") from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(part) for part in item['loc'])}: {reason(AccountFacts, item)}"
                             for item in error.errors(include_url=False))
        raise FactsError(f"account facts {path}: {problems}") from None


class FactsLookups(PulumiAwsLookups):
    """The provider's data sources as the engine answers them, and from the account facts what no
    data source reads (what an existing Prometheus workspace holds)."""

    def __init__(self, facts: AccountFacts | None):
        self.facts = facts

    def bucket(self, name: str) -> Bucket:
        """The engine's answer, with the owner and encryption the facts recorded."""
        found = super().bucket(name)
        listed = (self.facts.buckets if self.facts else None) or []
        recorded = next((bucket for bucket in listed if bucket.name == name), None)
        if not found.exists or recorded is None:
            return found
        return dataclasses.replace(found, owned_by_account=recorded.owned_by_account,
                                   encryption=recorded.encryption or "")

    def certificate(self, arn: str) -> Certificate:
        """From the facts: the engine has no status or expiry of its own to give."""
        return facts_certificate(arn, self.facts.certificates if self.facts else None)

    def prometheus_workspace_contents(self, workspace_id: str) -> PrometheusWorkspaceContents | None:
        for workspace in self.facts.prometheus_workspaces if self.facts else ():
            if workspace.id == workspace_id:
                return workspace.contents()
        return None
