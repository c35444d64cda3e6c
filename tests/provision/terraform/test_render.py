import subprocess

import pytest

from clusterspec.errors import UserError
from provision.terraform.render import render
from tests.provision.terraform.tf_files import module_calls, parse
from tests.support import ROOT, load_yaml, require_tool

AMI_CASES = load_yaml(ROOT / "tests/provision/terraform/data/ami_files.yaml")


def test_every_region_and_global_are_rendered(cluster, rendered):
    assert sorted(p.name for p in rendered.iterdir() if p.is_dir()) == sorted(
        ["global", *[r.name for r in cluster.regions]]
    )
    for region in cluster.regions:
        assert (rendered / region.name / "versions.tf").exists()
        assert (rendered / region.name / "node_groups.tf").exists()


def test_render_is_deterministic(cluster, rendered, tmp_path):
    again = tmp_path / "again"
    render(cluster, out_dir=again, ami_dir=tmp_path / "no-ami")
    first = {p.relative_to(rendered): p.read_bytes() for p in rendered.rglob("*.tf")}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*.tf")}
    # Module sources are relative to the output directory; both renders sit at the same depth.
    assert first.keys() == second.keys()
    assert first == second


def test_rendered_files_pass_terraform_fmt(rendered):
    terraform = require_tool("terraform")
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-diff", str(rendered)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_modules_pass_terraform_fmt():
    terraform = require_tool("terraform")
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", str(ROOT / "terraform")], capture_output=True, text=True
    )
    assert result.returncode == 0, f"not formatted: {result.stdout}"


def test_backend_is_s3_with_lock_files(cluster, rendered):
    """use_lockfile: S3 lock files; the DynamoDB lock table is deprecated since Terraform 1.11."""
    for root in rendered.iterdir():
        terraform = parse(root / "versions.tf")["terraform"][0]
        backend = terraform["backend"][0]["s3"]
        assert backend["bucket"] == f"{cluster.name}-terraform-state"
        assert backend["key"] == f"{root.name}/terraform.tfstate"
        assert backend["use_lockfile"] is True and "dynamodb_table" not in backend
        assert backend["encrypt"] is True
        assert terraform["required_version"] == ">= 1.11.0"


def test_only_the_primary_region_has_the_control_plane(cluster, rendered):
    for region in cluster.regions:
        calls = module_calls(rendered / region.name)
        primary = region.name == cluster.primary_region
        assert ("control_plane" in calls) is primary
        assert ("client_vpn" in calls) is primary
        assert ("dns" in calls) is primary
        assert ("dns_association" in calls) is not primary


def test_each_region_peers_with_every_earlier_region(cluster, rendered):
    order = cluster.spill_over_order
    for i, region in enumerate(order):
        calls = module_calls(rendered / region)
        peers = sorted(body["peer_region"] for name, body in calls.items() if name.startswith("peering_"))
        assert peers == sorted(order[:i])


@pytest.mark.parametrize("case", AMI_CASES, ids=[c["name"] for c in AMI_CASES])
def test_ami_file(case, cluster, tmp_path):
    ami_dir = tmp_path / "ami"
    ami_dir.mkdir()
    (ami_dir / "us-west-2.json").write_text(case["content"])
    out = tmp_path / "out"
    if "error" in case:
        with pytest.raises(UserError) as err:
            render(cluster, regions=["us-west-2"], out_dir=out, ami_dir=ami_dir)
        assert len(err.value.lines) == 1
        assert case["error"] in err.value.lines[0] and "us-west-2.json" in err.value.lines[0]
        return
    render(cluster, regions=["us-west-2"], out_dir=out, ami_dir=ami_dir)
    calls = module_calls(out / "us-west-2")
    groups = [b for n, b in calls.items() if n.startswith("node_group_")]
    assert groups and all(b["ami_id"] == case["ami"] for b in groups)
    assert calls["control_plane"]["ami_id"] == case["ami"]


def test_without_an_ami_file_launch_templates_resolve_the_ssm_parameter(cluster, rendered):
    calls = module_calls(rendered / cluster.primary_region)
    for name, body in calls.items():
        if name.startswith("node_group_"):
            assert body["ami_id"] == "" and body["ami_ssm_parameter"] == f"/{cluster.name}/ami/gpu-worker"
    node_group = (ROOT / "terraform/modules/node_group/main.tf").read_text()
    assert 'var.ami_id != "" ? var.ami_id : "resolve:ssm:${var.ami_ssm_parameter}"' in node_group


def test_unknown_region_is_one_clear_line(cluster, tmp_path):
    with pytest.raises(UserError) as err:
        render(cluster, regions=["mars-1"], out_dir=tmp_path)
    assert err.value.lines == [
        "--region mars-1: not in the spec; regions are us-west-2, us-east-1, us-east-2"
    ]


def test_rerender_replaces_stale_files_but_keeps_terraform_state(cluster, tmp_path):
    out = tmp_path / "out"
    render(cluster, regions=["us-east-1"], out_dir=out, ami_dir=tmp_path)
    (out / "us-east-1" / "stale.tf").write_text("# left over\n")
    (out / "us-east-1" / ".terraform").mkdir()
    render(cluster, regions=["us-east-1"], out_dir=out, ami_dir=tmp_path)
    assert not (out / "us-east-1" / "stale.tf").exists()
    assert (out / "us-east-1" / ".terraform").is_dir()
