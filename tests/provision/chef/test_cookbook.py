"""Static checks of the cookbook with what Debian offers (no Chef, ChefSpec or cookstyle here)."""

from __future__ import annotations

import re
import subprocess

import pytest

from clusterspec.loader import load_spec
from tests.provision.chef.support import COOKBOOK, HERE, generate
from tests.support import require_tool

RUBY_FILES = sorted([*COOKBOOK.rglob("*.rb"), HERE / "render_erb.rb"])


@pytest.mark.tool
@pytest.mark.parametrize("path", RUBY_FILES, ids=lambda p: str(p.relative_to(COOKBOOK.parent.parent.parent)))
def test_ruby_syntax(path):
    ruby = require_tool("ruby")
    run = subprocess.run([ruby, "-c", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.tool
def test_rubocop_has_no_offenses():
    rubocop = require_tool("rubocop")
    run = subprocess.run(
        [rubocop, "--format", "simple", str(COOKBOOK), str(HERE / "render_erb.rb")],
        capture_output=True,
        text=True,
        cwd=COOKBOOK,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_metadata_supports_ubuntu():
    text = (COOKBOOK / "metadata.rb").read_text()
    assert re.search(r"^name 'cluster_node'$", text, re.MULTILINE)
    assert re.search(r"^supports 'ubuntu'", text, re.MULTILINE)


def test_every_template_and_recipe_referenced_exists():
    sources = set()
    recipes = set()
    for path in [*COOKBOOK.glob("recipes/*.rb"), *COOKBOOK.glob("resources/*.rb")]:
        text = path.read_text()
        sources |= set(re.findall(r"source '([^']+\.erb)'", text))
        sources |= set(re.findall(r"'\.\./templates/([^']+\.erb)'", text))  # rendered by the resource itself
        recipes |= set(re.findall(r"include_recipe 'cluster_node::(\w+)'", text))
    assert sources == {p.name for p in COOKBOOK.glob("templates/*.erb")}
    assert recipes == {p.stem for p in COOKBOOK.glob("recipes/*.rb")} - {"default"}


def test_readme_documents_every_attribute(tmp_path):
    attrs = generate(load_spec(), tmp_path)[0]["cluster_node"]
    readme = (COOKBOOK / "README.md").read_text()
    defaults = re.findall(
        r"default\['cluster_node'\]\['(\w+)'\]", (COOKBOOK / "attributes/default.rb").read_text()
    )
    for key in [*attrs, *defaults]:
        assert f"`{key}`" in readme, f"README.md's attribute table lacks {key}"


def test_every_mount_is_left_out_of_fsck():
    # The cookbook mounts NFS exports and bind mounts only; Chef's mount resource writes fsck pass 2 by default.
    blocks = [
        m
        for path in COOKBOOK.glob("recipes/*.rb")
        for m in re.findall(r"^( *)mount [^\n]* do\n(.*?)^\1end$", path.read_text(), re.MULTILINE | re.DOTALL)
    ]
    assert blocks
    for _, body in blocks:
        assert re.search(r"^\s*pass 0\b", body, re.MULTILINE), body
