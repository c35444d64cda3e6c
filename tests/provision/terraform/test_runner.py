"""The runner against a fake terraform binary: one-line failures naming the fix, plan counting."""

import json

import pytest

from clusterspec.errors import UserError
from provision.terraform.runner import (
    CREDENTIALS_HINT,
    INSTALL_HINT,
    Changes,
    Runner,
    require_aws_credentials,
)
from tests.support import ROOT, load_yaml

pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")

DATA = ROOT / "tests/provision/terraform/data"
FAILURES = load_yaml(DATA / "terraform_failures.yaml")
PLANS = load_yaml(DATA / "plans.yaml")


@pytest.fixture
def root(tmp_path):
    d = tmp_path / "root"
    d.mkdir()
    (d / "versions.tf").write_text("terraform {}\n")
    return d


def test_missing_terraform_binary_names_the_fix(root, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(UserError) as err:
        Runner(root)
    assert err.value.lines == [INSTALL_HINT]


def test_missing_aws_credentials_names_the_fix(monkeypatch, tmp_path):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(UserError) as err:
        require_aws_credentials()
    assert err.value.lines == [CREDENTIALS_HINT]


def test_unrendered_root_and_bad_plugin_dir_are_one_line(tmp_path, fake, root):
    with pytest.raises(UserError, match="run `invoke render` first"):
        Runner(tmp_path / "nothing")
    with pytest.raises(UserError, match="not a directory"):
        Runner(root, plugin_dir=tmp_path / "missing")


@pytest.mark.parametrize("case", FAILURES, ids=[c["name"] for c in FAILURES])
def test_init_failure_becomes_one_line_naming_the_fix(case, fake, root, tmp_path):
    fake.script({"init": {"code": 1, "stderr": case["stderr"]}})
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    runner = Runner(root, plugin_dir=mirror if case.get("plugin_dir") else None)
    with pytest.raises(UserError) as err:
        runner.init()
    assert len(err.value.lines) == 1 and "\n" not in err.value.lines[0]
    assert case["expect"] in err.value.lines[0]


def test_plugin_dir_is_passed_to_init(fake, root, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    Runner(root, plugin_dir=mirror).init()
    assert f"-plugin-dir={mirror}" in fake.calls[0]


def test_an_embedded_aws_backend_reconfigures_and_so_does_leaving_it(fake, rendered, tmp_path):
    """--endpoint: the state goes to the embedded AWS (-backend-config) and is never migrated there or back."""
    backend = tmp_path / "endpoint.backend.hcl"
    backend.write_text('endpoints = { s3 = "https://127.0.0.1:5000" }\n')
    Runner(rendered / "us-west-2", backend_config=backend).init()
    assert "-reconfigure" in fake.calls[0] and f"-backend-config={backend}" in fake.calls[0]
    root = _initialised(
        rendered / "us-west-2", tmp_path, {"bucket": "b", "endpoints": {"s3": "https://127.0.0.1:5000"}}
    )
    Runner(root).init()
    assert "-reconfigure" in fake.calls[1] and not any(a.startswith("-backend-config") for a in fake.calls[1])


def test_targets_are_passed_to_plan(fake, root):
    Runner(root).plan(targets=["module.a.aws_b.c", 'module.d.aws_e.f["x"]'])
    (plan,) = [c for c in fake.calls if c[0] == "plan"]
    assert "-target=module.a.aws_b.c" in plan and '-target=module.d.aws_e.f["x"]' in plan


def _initialised(rendered_root, tmp_path, config: dict):
    """A copy of a rendered root whose .terraform/ remembers a backend ``config`` (as Terraform caches it)."""
    root = tmp_path / "initialised"
    root.mkdir()
    (root / "versions.tf").write_text((rendered_root / "versions.tf").read_text())
    (root / ".terraform").mkdir()
    cached = {"version": 3, "backend": {"type": "s3", "config": config, "hash": 1}}
    (root / ".terraform/terraform.tfstate").write_text(json.dumps(cached))
    return root


def test_moving_locks_from_dynamodb_to_lock_files_reconfigures_in_place(fake, rendered, cluster, tmp_path):
    """Same bucket, key and region; only the lock settings changed: -reconfigure keeps the same state object."""
    old = {
        "bucket": f"{cluster.name}-terraform-state",
        "key": f"{cluster.primary_region}/terraform.tfstate",
        "region": cluster.primary_region,
        "dynamodb_table": f"{cluster.name}-terraform-locks",
        "use_lockfile": None,
        "encrypt": True,
    }
    Runner(_initialised(rendered / cluster.primary_region, tmp_path, old)).init()
    assert "-reconfigure" in fake.calls[0]


def test_a_different_state_object_is_never_reconfigured_silently(fake, rendered, cluster, tmp_path):
    old = {"bucket": "someone-elses-state", "key": f"{cluster.primary_region}/terraform.tfstate"}
    old |= {"region": cluster.primary_region, "dynamodb_table": "x"}
    Runner(_initialised(rendered / cluster.primary_region, tmp_path, old)).init()
    assert "-reconfigure" not in fake.calls[0]


@pytest.mark.parametrize("case", PLANS, ids=[c["name"] for c in PLANS])
def test_plan_changes_are_counted(case):
    changes = Changes.from_plan_json(case["plan"])
    counts = {k: len(getattr(changes, k)) for k in ("create", "update", "delete")}
    assert counts == case["counts"]
    assert changes.empty is (sum(counts.values()) == 0)
