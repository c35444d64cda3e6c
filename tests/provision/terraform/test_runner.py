"""The runner and the up/down flows against a fake terraform binary (no AWS, no network)."""

import json
import os
import stat
import sys

import pytest
import yaml

from provision.errors import UserError
from provision.terraform import commands
from provision.terraform.runner import (
    CREDENTIALS_HINT,
    INSTALL_HINT,
    Changes,
    Runner,
    require_aws_credentials,
)
from tests.support import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")

DATA = ROOT / "tests/provision/terraform/data"
FAILURES = yaml.safe_load((DATA / "terraform_failures.yaml").read_text())
PLANS = yaml.safe_load((DATA / "plans.yaml").read_text())
DESTROY_ALL = {"resource_changes": [{"address": "a.b", "change": {"actions": ["delete"]}}]}
CREATE_ONE = {"resource_changes": [{"address": "a.b", "change": {"actions": ["create"]}}]}


class FakeTerraform:
    def __init__(self, tmp_path, monkeypatch):
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        exe = bin_dir / "terraform"
        exe.write_text(f"#!{sys.executable}\n" + (DATA / "fake_terraform.py").read_text())
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        self.script_path, self.log_path = tmp_path / "script.json", tmp_path / "calls.log"
        self.log_path.write_text("")
        self.script({"plans": {"tfplan": CREATE_ONE, "destroy.tfplan": DESTROY_ALL}})
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_TF_SCRIPT", str(self.script_path))
        monkeypatch.setenv("FAKE_TF_LOG", str(self.log_path))
        for name in commands.PRIMARY_VARIABLES:
            monkeypatch.setenv(f"TF_VAR_{name}", "arn:aws:acm:us-west-2:123456789012:certificate/x")

    def script(self, data: dict) -> None:
        self.script_path.write_text(json.dumps(data))

    @property
    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def commands(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    return FakeTerraform(tmp_path, monkeypatch)


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


@pytest.mark.parametrize("case", PLANS, ids=[c["name"] for c in PLANS])
def test_plan_changes_are_counted(case):
    changes = Changes.from_plan_json(case["plan"])
    counts = {k: len(getattr(changes, k)) for k in ("create", "update", "delete")}
    assert counts == case["counts"]
    assert changes.empty is (sum(counts.values()) == 0)


def test_down_plans_asks_and_applies_a_saved_destroy_plan_never_force(cluster, fake, tmp_path):
    asked = []
    commands.down(cluster, ["us-east-2"], out=tmp_path / "out", ask=lambda p: asked.append(p) or cluster.name)
    assert asked and "destroy 1 resources in us-east-2" in asked[0]
    plan_call = next(c for c in fake.calls if c[0] == "plan")
    assert "-destroy" in plan_call and "-out=destroy.tfplan" in plan_call
    assert any(c[0] == "apply" and c[-1] == "destroy.tfplan" for c in fake.calls)
    assert not any("-force" in c for c in fake.calls) and "destroy" not in fake.commands()


def test_down_without_the_right_answer_changes_nothing(cluster, fake, tmp_path):
    with pytest.raises(UserError, match="not confirmed; nothing was changed"):
        commands.down(cluster, ["us-east-2"], out=tmp_path / "out", ask=lambda p: "us-east-2")
    assert "apply" not in fake.commands()


def test_down_dry_run_and_all_in_reverse_order(cluster, fake, tmp_path, capfd):
    names = commands.selected_roots(cluster, None, True)
    assert names == ["global", "us-west-2", "us-east-1", "us-east-2"]
    commands.down(cluster, names, out=tmp_path / "out", dry_run=True, ask=lambda p: pytest.fail("asked"))
    assert "apply" not in fake.commands()
    planned = [c for c in fake.calls if c[0] == "plan"]
    assert len(planned) == 4
    order = [
        line.split("]")[0].strip("[") for line in capfd.readouterr().out.splitlines() if "to destroy" in line
    ]
    assert order == ["us-east-2", "us-east-1", "us-west-2", "global"]


def test_down_yes_skips_the_question(cluster, fake, tmp_path):
    commands.down(cluster, ["us-east-2"], out=tmp_path / "out", yes=True, ask=lambda p: pytest.fail("asked"))
    assert "apply" in fake.commands()


def test_up_applies_the_saved_plan_and_writes_outputs(cluster, fake, tmp_path):
    out = tmp_path / "out"
    commands.up(cluster, ["us-east-1"], out=out, ask=lambda p: pytest.fail("asked without deletions"))
    assert any(c[0] == "apply" and c[-1] == "tfplan" and "-input=false" in c for c in fake.calls)
    assert json.loads((out / "us-east-1" / "outputs.json").read_text())["vpc_id"]["value"] == "vpc-1"


def test_up_asks_before_a_plan_that_destroys(cluster, fake, tmp_path):
    fake.script({"plans": {"tfplan": DESTROY_ALL}})
    with pytest.raises(UserError, match="not confirmed"):
        commands.up(cluster, ["us-east-1"], out=tmp_path / "out", ask=lambda p: "no")
    assert "apply" not in fake.commands()


def test_up_all_goes_in_spill_over_order(cluster, fake, tmp_path):
    commands.up(cluster, commands.selected_roots(cluster, None, True), out=tmp_path / "out")
    assert fake.commands().count("apply") == 4
    written = sorted((tmp_path / "out").glob("*/outputs.json"), key=lambda p: p.stat().st_mtime_ns)
    assert [p.parent.name for p in written] == ["global", "us-west-2", "us-east-1", "us-east-2"]


def test_region_and_all_together_or_neither_is_an_error(cluster):
    with pytest.raises(UserError, match="either --region R or --all"):
        commands.selected_roots(cluster, "us-west-2", True)
    with pytest.raises(UserError, match="--region is required"):
        commands.selected_roots(cluster, None, False)


def test_primary_region_without_the_vpn_certificates_names_the_variables(
    cluster, fake, tmp_path, monkeypatch
):
    monkeypatch.delenv("TF_VAR_client_vpn_client_ca_arn")
    with pytest.raises(UserError) as err:
        commands.plan(cluster, ["us-west-2"], out=tmp_path / "out")
    assert err.value.lines == [
        "us-west-2 needs the Client VPN certificates imported into ACM: set TF_VAR_client_vpn_client_ca_arn "
        "to their ARNs (docs/terraform.md)"
    ]
    assert fake.calls == []


def test_up_yes_refuses_a_plan_that_destroys_more_than_the_cap(cluster, fake, tmp_path):
    many = [{"address": f"a.b{i}", "change": {"actions": ["delete", "create"]}} for i in range(6)]
    fake.script({"plans": {"tfplan": {"resource_changes": many}}})
    with pytest.raises(UserError, match="destroys 6 resources, more than --yes may"):
        commands.up(cluster, ["us-east-1"], out=tmp_path / "out", yes=True)
    assert "apply" not in fake.commands()
