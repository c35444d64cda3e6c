"""A zone that does not exist (issue 36): `invoke validate` and `invoke check-terraform` refuse it in one line
against the table of the regions' real zones (clusterspec/data/zones.yaml), and every zone of the project's own
spec is in it."""

from __future__ import annotations

import pytest
import yaml
from invoke import Context
from invoke.exceptions import Exit

import tasks
from clusterspec import catalog
from clusterspec.loader import load_spec
from tests.support import ROOT

LINE = "us-west-2 has no zone 'us-west-2z'; its zones are us-west-2a, us-west-2b, us-west-2c, us-west-2d"


@pytest.fixture
def bad_spec(tmp_path):
    doc = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    doc["regions"][0]["zones"] = ["us-west-2a", "us-west-2z"]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("task", [tasks.validate, tasks.check_terraform])
def test_validate_and_check_terraform_refuse_a_zone_that_does_not_exist(task, bad_spec, tmp_path, capsys):
    kwargs = {"out": str(tmp_path / "out")} if task is tasks.check_terraform else {}
    with pytest.raises(Exit) as e:
        task(Context(), spec=str(bad_spec), **kwargs)
    assert e.value.code != 0
    err = capsys.readouterr().err
    assert LINE in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before anything was rendered


def test_the_projects_zones_are_real_and_the_table_is_well_formed():
    table = catalog.zones()
    for region in load_spec().regions:
        assert set(region.zones) <= set(table[region.name]), region.name
    for region, names in table.items():
        assert names and all(n.startswith(region) and len(n) == len(region) + 1 for n in names)
