"""The disruptive changes `invoke up` lists and asks about, from `terraform show -json` plan fixtures."""

import pytest

from clusterspec.errors import UserError
from provision.terraform import commands
from provision.terraform.plan_summary import address_type, disruptions
from tests.provision.terraform.conftest import DATA
from tests.support import load_yaml

CASES = load_yaml(DATA / "disruptive_plans.yaml")
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_disruptive_changes_are_listed(case):
    assert [str(d) for d in disruptions(case["plan"])] == case["expect"]


def test_address_type():
    assert address_type('module.a.module.b.aws_instance.x["k"]') == "aws_instance"
    assert address_type("aws_vpc.this") == "aws_vpc"


def _plan(name: str) -> dict:
    return next(c["plan"] for c in CASES if c["name"] == name)


def test_up_shows_a_lowered_maximum_and_asks_even_without_deletions(cluster, fake, tmp_path, capfd):
    fake.script({"plans": {"tfplan": _plan("a lowered group maximum below the desired capacity")}})
    asked = []
    with pytest.raises(UserError, match="not confirmed"):
        commands.up(cluster, ["us-east-1"], out=tmp_path / "out", ask=lambda p: asked.append(p) or "no")
    assert asked == ["type us-east-1 to apply it: "]
    printed = capfd.readouterr().out
    assert "[us-east-1] 1 disruptive changes:" in printed and "max_size lowered 10 -> 4" in printed
    assert "apply" not in fake.commands()


def test_up_applies_disruptive_changes_once_confirmed_or_with_yes(cluster, fake, tmp_path):
    fake.script({"plans": {"tfplan": _plan("VPN tunnel options and a launch template's image")}})
    commands.up(cluster, ["us-east-1"], out=tmp_path / "out", ask=lambda p: "us-east-1")
    commands.up(cluster, ["us-east-1"], out=tmp_path / "out", yes=True, ask=lambda p: pytest.fail("asked"))
    assert fake.commands().count("apply") == 2


def test_up_does_not_ask_about_harmless_changes(cluster, fake, tmp_path):
    fake.script({"plans": {"tfplan": _plan("nothing disruptive")}})
    commands.up(cluster, ["us-east-1"], out=tmp_path / "out", ask=lambda p: pytest.fail("asked"))
    assert "apply" in fake.commands()
