"""`--endpoint` (provision/terraform/endpoint.py), the provider mirror (mirror.py) and the rehearsal's left-out
list (rehearsal.py): what is written into a root, what is refused, what is left out."""

from __future__ import annotations

import os

import pytest

from clusterspec.errors import UserError
from provision.terraform import endpoint, mirror, rehearsal


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:5000", "http://127.0.0.1:5000/", "https://localhost:4566"]
)
def test_a_loopback_url_is_taken(url):
    assert endpoint.check_url(url) == url.rstrip("/")


@pytest.mark.parametrize("url", ["https://10.0.0.5:5000", "https://s3.amazonaws.com", "ftp://127.0.0.1:21", "127.0.0.1:5000", "https://127.0.0.1:5000/x"])  # fmt: skip
def test_anything_else_is_one_line(url):
    with pytest.raises(UserError, match=r"^--endpoint .*: expected the embedded AWS's URL on this machine"):
        endpoint.check_url(url)


def test_services_drop_the_aliases_of_another_key():
    keys = endpoint.services(
        ["beanstalk", "elasticbeanstalk", "s3", "s3api", "sts", "logs", "cloudwatchlogs"]
    )
    assert keys == ["elasticbeanstalk", "logs", "s3", "sts"]


def test_the_override_covers_every_provider_configuration(tmp_path):
    (tmp_path / "providers.tf").write_text(
        'provider "aws" {\n  region = "us-east-2"\n}\n\nprovider "aws" {\n  alias  = "us_west_2"\n'
        '  region = "us-west-2"\n}\n'
    )
    backend = endpoint.write(tmp_path, "https://127.0.0.1:5000", ["ec2", "s3", "sts"])
    text = (tmp_path / endpoint.OVERRIDE_FILE).read_text()
    assert text.count('provider "aws" {') == 2 and 'alias = "us_west_2"' in text
    assert text.count('ec2 = "https://127.0.0.1:5000"') == 2 and "skip_credentials_validation = true" in text
    assert 'access_key = "testing"' in text and "s3_use_path_style           = true" in text
    assert (
        's3  = "https://127.0.0.1:5000"' in backend.read_text()
        and "use_path_style = true" in backend.read_text()
    )
    endpoint.write(tmp_path, None, None)  # without --endpoint nothing of it stays
    assert not (tmp_path / endpoint.OVERRIDE_FILE).exists() and not backend.exists()


def test_use_sets_dummy_credentials_and_drops_a_profile():
    """use() changes this process's environment: the whole environment is put back after (monkeypatch records no
    key it deletes while absent, so AWS_ENDPOINT_URL would outlive the test and send every later boto3 call of the
    worker to a port nobody serves)."""
    saved = dict(os.environ)
    try:
        os.environ.update(AWS_PROFILE="real", AWS_SESSION_TOKEN="real")
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED",
                    "AWS_DISABLE_HOST_PREFIX_INJECTION"):  # fmt: skip
            os.environ.pop(key, None)
        endpoint.use("https://127.0.0.1:5000")
        assert "AWS_PROFILE" not in os.environ and "AWS_SESSION_TOKEN" not in os.environ
        assert (
            os.environ["AWS_ACCESS_KEY_ID"] == "testing"
            and os.environ["AWS_ENDPOINT_URL"] == "https://127.0.0.1:5000"
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_mirror_is_found_by_its_layout(tmp_path, monkeypatch):
    plat = mirror._platform()
    (tmp_path / "registry.terraform.io/hashicorp/aws/5.100.0" / plat).mkdir(parents=True)
    (
        tmp_path / "registry.terraform.io/hashicorp/aws/5.100.0" / plat / "terraform-provider-aws_v5.100.0_x5"
    ).touch()
    (tmp_path / "registry.terraform.io/hashicorp/aws/6.2.0" / plat).mkdir(
        parents=True
    )  # empty: not a version
    assert mirror.versions(tmp_path) == ["5.100.0"]
    monkeypatch.setenv("LAB_TF_PLUGIN_DIR", str(tmp_path))
    assert mirror.plugin_dir() == tmp_path
    assert mirror.plugin_dir("/given") == mirror.Path("/given")


def test_the_left_out_list_names_each_gap():
    entries = rehearsal.load()
    assert entries and all(e.gap and "moto" in e.gap for e in entries)
    keep, left = rehearsal.split(
        ["module.budget.aws_budgets_budget.monthly", 'module.buckets.aws_s3_bucket.this["results"]'], entries
    )
    assert keep == ['module.buckets.aws_s3_bucket.this["results"]']
    assert list(left) == ["module.budget.aws_budgets_budget.monthly"]


def test_config_address_drops_instance_keys():
    assert rehearsal.config_address('module.a["x"].aws_b.c[0]') == "module.a.aws_b.c"


def test_a_bad_entry_is_one_line(tmp_path):
    bad = tmp_path / "left_out.yaml"
    bad.write_text("- address: module.x.aws_y.z\n")
    with pytest.raises(UserError, match=r"left_out.yaml: entry 1: expected \{address: ..., gap: ...\}"):
        rehearsal.load(bad)


def test_without_a_mirror_check_terraform_says_which_schema_it_reads(monkeypatch, tmp_path):
    from provision.terraform.settings import PROVIDER_SCHEMA

    monkeypatch.delenv("LAB_TF_PLUGIN_DIR", raising=False)
    monkeypatch.setattr(mirror, "candidates", lambda: [tmp_path])
    assert mirror.plugin_dir() is None
    path, line = mirror.check_schema()
    assert (
        path == PROVIDER_SCHEMA
        and line.startswith("no hashicorp/aws mirror on this machine")
        and "npm" in line
    )
