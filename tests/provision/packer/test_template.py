"""The template under packer/: formatted, valid for Packer 1.6.6, and consistent with its scripts."""

from __future__ import annotations

import re
import subprocess

import hcl2
import pytest
from packerpy import PackerExecutable

from clusterspec.loader import load_spec
from provision.packer import template
from provision.packer.variables import packer_variables, write_var_file
from tests.support import require_tool

SCRIPTS = template.TEMPLATE_DIR / "scripts"
HCL_FILES = sorted(template.TEMPLATE_DIR.glob("*.pkr.hcl"))
# Unknown to Packer 1.6.6 (and `can(regex(...))` is silently false there).
UNSUPPORTED_IN_16 = re.compile(r"\b(regex|regexall|regex_replace)\s*\(|^\s*data\s+\"", re.MULTILINE)
# A pipe into a reader that quits at its first match (grep -q, head, awk's exit): under pipefail the writer's
# next write gets SIGPIPE and the whole pipeline fails, so a found match reads as a missing one.
EARLY_QUITTING_READER = re.compile(r"(?<!\|)\|(?!\|)\s*(grep\s+(-\w*q|--quiet)|head\b|awk\b.*\bexit\b)")
# ...unless the writer prints one line and exits (`<tool> --version`): nothing left to write after the match.
ONE_LINE_WRITER = re.compile(r"--version(\s+2>/dev/null)?\s*$")


@pytest.mark.tool
def test_packer_fmt_check():
    exe = require_tool("packer")
    run = subprocess.run([exe, "fmt", "-check", "-diff", str(template.TEMPLATE_DIR)], capture_output=True)
    assert run.returncode == 0, run.stdout.decode() + run.stderr.decode()


@pytest.mark.tool
def test_packer_validate_with_generated_variables(tmp_path):
    exe = require_tool("packer")
    staged = template.stage(tmp_path / "template", with_plugins=False)
    var_file = write_var_file(packer_variables(load_spec(), "us-west-2"), tmp_path / "v.pkrvars.json")
    rc, out, err = PackerExecutable(executable_path=exe).validate(str(staged), var_file=str(var_file))
    assert rc == 0, out.decode() + err.decode()


@pytest.mark.tool
def test_a_wrong_variable_fails_validation(tmp_path):
    exe = require_tool("packer")
    staged = template.stage(tmp_path / "template", with_plugins=False)
    values = packer_variables(load_spec(), "us-west-2") | {"ami_name": "x"}  # AWS needs 3 to 128 characters
    var_file = write_var_file(values, tmp_path / "v.pkrvars.json")
    rc, out, _ = PackerExecutable(executable_path=exe).validate(str(staged), var_file=str(var_file))
    assert rc != 0 and b"ami_name" in out


def test_staging_leaves_plugins_out_for_packer_16(tmp_path):
    names = {p.name for p in template.stage(tmp_path / "a", with_plugins=False).glob("*.pkr.hcl")}
    assert template.PLUGINS not in names and "gpu-worker.pkr.hcl" in names
    assert template.PLUGINS in {p.name for p in template.stage(tmp_path / "b", with_plugins=True).iterdir()}


@pytest.mark.parametrize("path", HCL_FILES, ids=[p.name for p in HCL_FILES])
def test_no_constructs_packer_16_lacks(path):
    text = path.read_text()
    assert not UNSUPPORTED_IN_16.search(text)
    if path.name != template.PLUGINS:
        assert "required_plugins" not in text


def test_plugins_file_holds_only_the_packer_block():
    parsed = hcl2.loads((template.TEMPLATE_DIR / template.PLUGINS).read_text())
    assert set(parsed) - {"__comments__"} == {"packer"}
    assert "amazon" in parsed["packer"][0]["required_plugins"][0]


def test_source_is_canonical_ubuntu():
    source = hcl2.loads(template.TEMPLATE.read_text())["source"][0]['"amazon-ebs"']['"ubuntu"']
    ami_filter = source["source_ami_filter"][0]
    assert ami_filter["owners"] == ['"099720109477"']
    assert ami_filter["filters"]["name"] == "${var.source_ami_name}"


def test_one_bake_copied_encrypted_to_every_region_with_its_package_lock():
    parsed = hcl2.loads(template.TEMPLATE.read_text())
    source = parsed["source"][0]['"amazon-ebs"']['"ubuntu"']
    assert source["ami_regions"] == "${var.ami_regions}"
    assert source["encrypt_boot"] is True
    provisioners = [p for b in parsed["build"] for p in b["provisioner"]]
    lock_steps = [(kind.strip('"'), body) for p in provisioners for kind, body in p.items()][-2:]
    (shell, dump), (file, download) = lock_steps
    assert (shell, file) == ("shell", "file")
    assert "dpkg-query -W" in dump["inline"][0] and dump["except"] == download["except"] == [
        '"amazon-ebs.local"'
    ]
    assert download["direction"] == '"download"' and download["source"] == '"/tmp/package-lock"'
    assert download["destination"] == "${var.package_lock_path}"
    values = packer_variables(load_spec(), "us-east-1")
    assert values["ami_regions"] == ["us-west-2", "us-east-2"]


def test_every_script_runs_and_only_scripts_that_exist():
    assert sorted(template.provisioner_scripts()) == sorted(p.name for p in SCRIPTS.glob("*.sh"))
    assert template.provisioner_scripts()[-1] == "check.sh"


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.sh")), ids=lambda p: p.name)
def test_scripts_are_strict_and_get_their_variables_from_the_template(script):
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    provided = set(template.script_environment(packer_variables(load_spec(), "us-west-2")))
    needed = set(re.findall(r'"\$\{(\w+):\?', text))
    assert needed <= provided, f"{script.name} needs {sorted(needed - provided)}"


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.sh")), ids=lambda p: p.name)
def test_no_pipeline_into_a_reader_that_quits_early(script):
    for line in re.sub(r"(\\|\|)\n\s*", r"\1 ", script.read_text()).splitlines():  # continued lines joined
        for m in EARLY_QUITTING_READER.finditer(line):
            assert ONE_LINE_WRITER.search(line[: m.start()]), f"{script.name}: {line.strip()}"


def _commands(script) -> list[str]:
    """The script's lines with backslash continuations joined."""
    return script.read_text().replace("\\\n", " ").splitlines()


def test_the_container_toolkit_comes_whole_at_the_spec_version():
    # NVIDIA's install guide pins all four packages to one version; the toolkit depends on its libraries.
    wanted = {
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container-tools",
        "libnvidia-container1",
    }
    lines = _commands(SCRIPTS / "containerd.sh")
    (install,) = [line for line in lines if line.startswith("apt-get install")]
    assert set(re.findall(r'"([\w.-]+)=\$toolkit_pkg"', install)) == wanted
    (hold,) = [line for line in lines if line.startswith("apt-mark hold")]
    assert wanted <= set(hold.split())
