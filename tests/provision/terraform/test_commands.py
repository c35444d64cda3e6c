"""The up/down/plan flows against a fake terraform binary: order, confirmation, caps, never -force."""

import json

import pytest

from clusterspec.errors import UserError
from provision.terraform import commands
from tests.provision.terraform.conftest import DESTROY_ALL

pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")


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


class _Teardown:
    """Records when down calls the teardown's steps (provision/operations/teardown.py, issue 29)."""

    def __init__(self, fake, fail=False):
        self.fake, self.fail, self.steps = fake, fail, []

    def show(self):
        self.steps.append(("show", len(self.fake.calls)))
        return ["1 nodes to cordon (us-east-2)"]

    def before(self):
        self.steps.append(("before", "apply" in self.fake.commands()))
        if self.fail:
            raise UserError("1 pods still run; nothing was destroyed")

    def after(self):
        self.steps.append(("after", "apply" in self.fake.commands()))


def test_down_shows_the_teardown_before_asking_runs_it_before_the_destroy_and_cleans_up_after(cluster, fake, tmp_path,
                                                                                                capfd):  # fmt: skip
    t = _Teardown(fake)
    asked = []
    commands.down(cluster, ["us-east-2"], out=tmp_path / "out", teardown=t,
                  ask=lambda p: asked.append(len(t.steps)) or cluster.name)  # fmt: skip
    assert [s for s, _ in t.steps] == ["show", "before", "after"] and asked == [1]
    assert t.steps[1] == ("before", False) and t.steps[2] == ("after", True)
    assert "  1 nodes to cordon (us-east-2)" in capfd.readouterr().out


def test_a_teardown_that_refuses_stops_the_destroy(cluster, fake, tmp_path):
    with pytest.raises(UserError, match="nothing was destroyed"):
        commands.down(cluster, ["us-east-2"], out=tmp_path / "out", teardown=_Teardown(fake, fail=True),
                      ask=lambda p: cluster.name)  # fmt: skip
    assert "apply" not in fake.commands()


# issue 26: flannel's objects are applied by the control plane at boot (provision/flannel.py, tests/provision/test_flannel.py)
def test_up_refuses_the_primary_root_while_flannel_has_images_by_tag(cluster, fake, tmp_path, monkeypatch):
    from provision import images

    monkeypatch.delenv(images.BY_TAG_ENV, raising=False)
    with pytest.raises(
        UserError,
        match=r"image \d+\.dkr\.ecr\.us-west-2\.amazonaws\.com/dlr/mirror/docker\.io/flannel/flannel.* has no digest: nothing was deployed",
    ):
        commands.up(cluster, [cluster.primary_region], out=tmp_path / "out", yes=True)
    assert "apply" not in fake.commands() and "plan" not in fake.commands()
