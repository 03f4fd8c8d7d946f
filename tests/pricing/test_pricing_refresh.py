import json
from datetime import date
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from gpucloud.cli import main
from gpucloud.pricing import PricingError, load_catalog, refresh_catalog

FIXTURES = Path(__file__).parent / "fixtures"
LOCATION = "US East (N. Virginia)"
INSTANCE_FILTERS = [
    ("operatingSystem", "Linux"), ("tenancy", "Shared"), ("preInstalledSw", "NA"), ("capacitystatus", "Used"),
]


@pytest.fixture
def aws_credentials(monkeypatch):
    """Fake credentials so that no real account can be reached."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)


class StubbedSession:
    """A boto3 Session stand-in that hands out one stubbed pricing client and records how it was asked."""

    def __init__(self):
        self.client_calls = []
        self.pricing = boto3.session.Session().client("pricing", region_name="us-east-1")
        self.stubber = Stubber(self.pricing)

    def client(self, service_name, region_name=None):
        self.client_calls.append((service_name, region_name))
        return self.pricing


def _filters(pairs):
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in pairs]


def _queue(stubber, fixture, service_code, filter_pairs):
    """Serve a fixture's pages; Stubber checks each request's parameters against the service model."""
    pages = json.loads((FIXTURES / fixture).read_text())["pages"] if fixture else [{"FormatVersion": "aws_v1",
                                                                                      "PriceList": []}]
    token = None
    for page in pages:
        expected = {"ServiceCode": service_code, "Filters": _filters(filter_pairs), "FormatVersion": "aws_v1"}
        if token:
            expected["NextToken"] = token
        response = dict(page, PriceList=[json.dumps(item) for item in page["PriceList"]])
        stubber.add_response("get_products", response, expected)
        token = page.get("NextToken")


def _queue_region(stubber, instance_fixtures):
    for instance_type, fixture in instance_fixtures:
        _queue(stubber, fixture, "AmazonEC2", [("instanceType", instance_type), ("location", LOCATION),
                                                *INSTANCE_FILTERS])
    _queue(stubber, "ec2_gp3_us_east_1.json", "AmazonEC2", [("volumeApiName", "gp3"), ("location", LOCATION)])
    _queue(stubber, "kms_us_east_1.json", "awskms", [("location", LOCATION)])


def test_refresh_reads_paginated_price_lists_and_writes_the_catalog(aws_credentials, tmp_path):
    session = StubbedSession()
    _queue_region(session.stubber, [("g5.xlarge", "ec2_g5_xlarge_us_east_1.json"), ("p5e.48xlarge", None)])
    target = tmp_path / "prices.json"

    with session.stubber:
        result = refresh_catalog(session, target, ["us-east-1"], ["g5.xlarge", "p5e.48xlarge"],
                                 today=date(2026, 11, 22))
        session.stubber.assert_no_pending_responses()

    catalog = result.catalog
    assert session.client_calls == [("pricing", "us-east-1")]
    row = catalog.instance("g5.xlarge", "us-east-1")
    assert row.usd_per_hour == 1.006  # the Capacity Block offer on page 1 is ignored
    assert row.date == "2026-11-22" and "SAMPLEODG5XLUSE1" in row.source and "capacitystatus=Used" in row.source
    (absent,) = [r for r in catalog.absent_instances if (r.instance_type, r.region) == ("p5e.48xlarge", "us-east-1")]
    assert "no on-demand Linux price" in absent.reason
    gp3 = catalog.gp3("us-east-1")
    assert (gp3.usd_per_gb_month, gp3.usd_per_iops_month, gp3.usd_per_mibps_month) == (0.08, 0.005, 0.04)
    assert catalog.kms_key("us-east-1").usd_per_key_month == 1.0
    assert load_catalog(target) == catalog


def test_refresh_keeps_rows_outside_its_scope_the_spot_discounts_and_the_unqueried_services(aws_credentials, tmp_path):
    session = StubbedSession()
    _queue_region(session.stubber, [("g5.xlarge", "ec2_g5_xlarge_us_east_1.json")])
    packaged = load_catalog()

    with session.stubber:
        catalog = refresh_catalog(session, tmp_path / "prices.json", ["us-east-1"], ["g5.xlarge"],
                                  today=date(2026, 11, 22)).catalog

    assert catalog.instance("g5.xlarge", "eu-west-1") == packaged.instance("g5.xlarge", "eu-west-1")
    assert catalog.instance("p3.2xlarge", "us-east-1") == packaged.instance("p3.2xlarge", "us-east-1")
    assert catalog.gp3("ap-northeast-1") == packaged.gp3("ap-northeast-1")
    assert catalog.spot_discounts == packaged.spot_discounts
    assert catalog.network == packaged.network
    assert catalog.prometheus == packaged.prometheus and catalog.prometheus
    assert catalog.grafana == packaged.grafana and catalog.grafana
    assert catalog.load_balancers == packaged.load_balancers and catalog.load_balancers
    assert catalog.file_systems == packaged.file_systems and catalog.file_systems


def test_refresh_refuses_two_different_prices_for_one_type(aws_credentials, tmp_path):
    session = StubbedSession()
    pages = json.loads((FIXTURES / "ec2_g5_xlarge_us_east_1.json").read_text())["pages"]
    product = pages[1]["PriceList"][0]
    other = json.loads(json.dumps(product).replace("1.0060000000", "1.1000000000").replace("SAMPLEODG5XLUSE1",
                                                                                           "SAMPLEODG5XLUSE2"))
    session.stubber.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [json.dumps(product), json.dumps(other)]},
        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1",
         "Filters": _filters([("instanceType", "g5.xlarge"), ("location", LOCATION), *INSTANCE_FILTERS])},
    )

    with session.stubber, pytest.raises(PricingError, match="2 different hourly prices for g5.xlarge"):
        refresh_catalog(session, tmp_path / "prices.json", ["us-east-1"], ["g5.xlarge"])

    assert not (tmp_path / "prices.json").exists()


def test_every_supported_region_has_a_price_list_location_and_no_two_share_one():
    """`gpucloud prices refresh` refreshes SUPPORTED_REGIONS by default: each needs its own location name."""
    from gpucloud.pricing import SUPPORTED_REGIONS
    from gpucloud.pricing.refresh import REGION_LOCATIONS

    assert set(SUPPORTED_REGIONS) <= set(REGION_LOCATIONS)
    assert len(set(REGION_LOCATIONS.values())) == len(REGION_LOCATIONS)


def test_refresh_of_a_region_without_a_location_name_fails_before_any_call(aws_credentials, tmp_path):
    session = StubbedSession()

    with session.stubber, pytest.raises(PricingError, match="mars-north-1"):
        refresh_catalog(session, tmp_path / "prices.json", ["mars-north-1"], ["g5.xlarge"])


def test_refresh_that_gets_nothing_back_keeps_every_previous_row_and_says_so(aws_credentials, tmp_path):
    session = StubbedSession()
    for instance_type in ("g5.xlarge", "p5e.48xlarge"):
        _queue(session.stubber, None, "AmazonEC2", [("instanceType", instance_type), ("location", LOCATION),
                                                    *INSTANCE_FILTERS])
    _queue(session.stubber, None, "AmazonEC2", [("volumeApiName", "gp3"), ("location", LOCATION)])
    _queue(session.stubber, None, "awskms", [("location", LOCATION)])
    packaged = load_catalog()

    with session.stubber:
        result = refresh_catalog(session, tmp_path / "prices.json", ["us-east-1"], ["g5.xlarge", "p5e.48xlarge"],
                                 today=date(2026, 11, 22))

    catalog = result.catalog
    assert catalog.instance("g5.xlarge", "us-east-1") == packaged.instance("g5.xlarge", "us-east-1")
    assert catalog.gp3("us-east-1") == packaged.gp3("us-east-1")
    assert catalog.kms_key("us-east-1") == packaged.kms_key("us-east-1")
    assert load_catalog(tmp_path / "prices.json") == catalog
    assert len(result.kept) == 3
    assert any(message.startswith("kept the previous price of g5.xlarge in us-east-1") for message in result.kept)
    assert any(message.startswith("kept the previous gp3 price in us-east-1") for message in result.kept)
    assert any(message.startswith("kept the previous KMS key price in us-east-1") for message in result.kept)
    # p5e.48xlarge had no price before either: it stays an absent row, with today's reason.
    (absent,) = [r for r in catalog.absent_instances if (r.instance_type, r.region) == ("p5e.48xlarge", "us-east-1")]
    assert absent.date == "2026-11-22"


def test_prices_refresh_command_writes_the_catalog_and_warns_about_kept_rows(aws_credentials, tmp_path, monkeypatch,
                                                                            capsys):
    session = StubbedSession()
    _queue(session.stubber, "ec2_g5_xlarge_us_east_1.json", "AmazonEC2",
           [("instanceType", "g5.xlarge"), ("location", LOCATION), *INSTANCE_FILTERS])
    _queue(session.stubber, "ec2_gp3_us_east_1.json", "AmazonEC2", [("volumeApiName", "gp3"), ("location", LOCATION)])
    _queue(session.stubber, None, "awskms", [("location", LOCATION)])
    monkeypatch.setattr(boto3, "Session", lambda *args, **kwargs: session)
    target = tmp_path / "prices.json"

    with session.stubber:
        code = main(["prices", "refresh", "--regions", "us-east-1", "--instance-types", "g5.xlarge",
                     "--output", str(target)])
        session.stubber.assert_no_pending_responses()

    assert code == 0
    out, err = capsys.readouterr()
    written = load_catalog(target)
    assert f"wrote {len(written.instances)} instance prices to {target}" in out
    assert "warning: kept the previous KMS key price in us-east-1" in err
    assert written.instance("g5.xlarge", "us-east-1").usd_per_hour == 1.006
    assert written.kms_key("us-east-1") == load_catalog().kms_key("us-east-1")


def test_prices_refresh_command_reports_an_unknown_region_without_calling_aws(aws_credentials, tmp_path, monkeypatch,
                                                                             capsys):
    session = StubbedSession()
    monkeypatch.setattr(boto3, "Session", lambda *args, **kwargs: session)

    with session.stubber:
        code = main(["prices", "refresh", "--regions", "mars-north-1", "--output", str(tmp_path / "prices.json")])

    assert code == 2 and "mars-north-1" in capsys.readouterr().err
    assert session.client_calls == [] and not (tmp_path / "prices.json").exists()


def test_prices_refresh_without_credentials_is_one_line_and_exit_3(tmp_path, monkeypatch, capsys):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    code = main(["prices", "refresh", "--regions", "us-east-1", "--instance-types", "g5.xlarge",
                 "--output", str(tmp_path / "prices.json")])

    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1 and "Unable to locate credentials" in err and "Traceback" not in err
    assert not (tmp_path / "prices.json").exists()


def test_prices_refresh_against_a_failing_endpoint_is_one_line_and_exit_3(aws_credentials, tmp_path, monkeypatch,
                                                                          capsys):
    session = StubbedSession()
    session.stubber.add_client_error("get_products", service_error_code="ServiceUnavailable",
                                     service_message="try again later", http_status_code=503)
    monkeypatch.setattr(boto3, "Session", lambda *args, **kwargs: session)

    with session.stubber:
        code = main(["prices", "refresh", "--regions", "us-east-1", "--instance-types", "g5.xlarge",
                     "--output", str(tmp_path / "prices.json")])

    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "ServiceUnavailable" in err
