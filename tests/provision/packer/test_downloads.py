"""Every download of the image's scripts (and so of the Chef converge, which runs them) is verified (issue 26):
apt repository keys by their fingerprint, the AWS CLI installer by AWS's signature, the EFA installer by its
signature, the CUDA keyring by the key it holds. The fingerprints are AWS's, Docker's, NVIDIA's and Kubernetes'
published ones (clusterspec/data/gpu_stack.yaml). The key check runs for real with gpg against keys made here."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from clusterspec import drivers
from provision.packer import template
from provision.packer.variables import SIGNING_KEYS
from tests.support import ROOT

SCRIPTS = sorted((ROOT / "packer/scripts").glob("*.sh"))


DOWNLOAD = re.compile(r"^\s*curl |\$\(curl |\bcurl -|\bwget ", re.M)


@pytest.mark.parametrize("path", [p for p in SCRIPTS if DOWNLOAD.search(p.read_text())], ids=lambda p: p.name)
def test_nothing_downloaded_is_used_unverified(path):
    text = path.read_text()
    assert not re.search(r"curl [^\n]*\|\s*(gpg|bash|sh|tar|dpkg)\b", text), (
        "a download piped straight into use"
    )
    assert not re.search(r"dpkg -i ", text), "a downloaded package installed"
    assert re.search(r"\$\{?[A-Z_]+_FINGERPRINT", text), "no fingerprint the download is checked against"


def test_the_published_fingerprints_reach_the_scripts():
    table = drivers.stack_table()
    template_text = (ROOT / "packer/gpu-worker.pkr.hcl").read_text()
    for key in SIGNING_KEYS:
        assert re.fullmatch(r"[0-9A-F]{40}", table[key]), key
        assert f"{key.upper()}=${{var.{key}}}" in template_text, key
    # AWS CLI User Guide, "Verify the integrity and authenticity of the downloaded installer files"
    assert table["aws_cli_key_fingerprint"] == "FB5DB77FD5C118B80511ADA8A6310ACC4672475C"


def test_repository_keys_are_trusted_in_one_script():
    """One script holds the concern "repository keys trusted by fingerprint": no other script writes a keyring or
    a sources entry, and every third-party repository the installing scripts use is there, signed by its key."""
    for path in SCRIPTS:
        text = path.read_text()
        if path.name != "apt-repositories.sh":
            assert "/etc/apt/keyrings" not in text and "sources.list.d" not in text, path.name
    text = (ROOT / "packer/scripts/apt-repositories.sh").read_text()
    for name, fpr in [("docker", "DOCKER_APT"), ("nvidia-container-toolkit", "NVIDIA_CONTAINER_TOOLKIT"),
                      ("kubernetes", "KUBERNETES_APT")]:  # fmt: skip
        assert re.search(rf"repository {name} \S+ \\?\s*\"\${fpr}_KEY_FINGERPRINT\"", text), name
    assert (
        'trusted_key "$tmp/unpacked/usr/share/keyrings/cuda-archive-keyring.gpg" "$CUDA_REPO_KEY_FINGERPRINT"'
        in (text.replace("\\\n   ", ""))
    )
    order = template.provisioner_scripts()
    for user in ("cuda.sh", "containerd.sh", "kubernetes.sh"):
        assert order.index("apt-repositories.sh") < order.index(user)


def _gpg(home, *args, **kw):
    return subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", *args], check=True, capture_output=True, **kw
    )


def _fingerprints(home, name, kind=("pub", "sub")):
    listing = _gpg(home, "--with-colons", "--list-keys", name, text=True).stdout.splitlines()
    return [
        line.split(":")[9]
        for prev, line in zip(listing, listing[1:], strict=False)
        if line.startswith("fpr") and prev.startswith(kind)
    ]


@pytest.fixture
def keys(tmp_path):
    """Two vendors' keys as vendors publish them: a primary key with subkeys (encryption, and signing)."""
    if not shutil.which("gpg"):
        pytest.skip("gpg is not installed")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    out = {"home": home}
    for name in ("vendor", "attacker"):
        _gpg(
            home,
            "--passphrase",
            "",
            "--quick-gen-key",
            f"{name} <{name}@example.org>",
            "default",
            "default",
            "1d",
        )
        (fpr,) = _fingerprints(home, f"{name}@example.org", "pub")
        _gpg(home, "--passphrase", "", "--quick-add-key", fpr, "ed25519", "sign", "1d")
        armored = tmp_path / f"{name}.asc"
        armored.write_text(_gpg(home, "--armor", "--export", fpr, text=True).stdout)
        binary = tmp_path / f"{name}.gpg"
        binary.write_bytes(_gpg(home, "--export", fpr).stdout)
        out[name] = (fpr, armored, binary)
    yield out
    # making keys started a gpg-agent for this home, which would outlive the test (and keep using the CPU)
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False, capture_output=True)


def _source(script: str, call: str, tmp_path, *args: str):
    env = {"PATH": "/usr/bin:/bin", "GNUPGHOME": str(tmp_path / "empty"), "HOME": str(tmp_path)}
    (tmp_path / "empty").mkdir(mode=0o700, exist_ok=True)
    run = f'set -euo pipefail\n. "{ROOT}/packer/scripts/{script}"\n{call} "$@"\n'
    return subprocess.run(["bash", "-c", run, script, *args], env=env, capture_output=True, text=True)


def test_an_apt_key_is_installed_only_when_it_is_the_published_one(keys, tmp_path):
    vendor, attacker = keys["vendor"], keys["attacker"]
    assert len(_fingerprints(keys["home"], "vendor@example.org")) == 3  # the primary and two subkeys
    for form, source in (("armored", vendor[1]), ("binary, as cuda-keyring ships it", vendor[2])):
        keyring = tmp_path / f"{form[:6]}.gpg"
        ok = _source("apt-repositories.sh", "trusted_key", tmp_path, str(source), vendor[0], str(keyring))
        assert ok.returncode == 0, (form, ok.stderr)
        assert keyring.read_bytes()[:1] != b"-", form  # binary, as signed-by takes it
    # both keys in one file: the keyring holds the vendor's alone
    both = tmp_path / "both.asc"
    both.write_text(vendor[1].read_text() + attacker[1].read_text())
    ok = _source(
        "apt-repositories.sh", "trusted_key", tmp_path, str(both), vendor[0], str(tmp_path / "one.gpg")
    )
    assert ok.returncode == 0, ok.stderr
    shown = _gpg(keys["home"], "--with-colons", "--import-options", "show-only", "--import", str(tmp_path / "one.gpg"),
                 text=True).stdout  # fmt: skip
    assert vendor[0] in shown and attacker[0] not in shown
    # the attacker's key, or the vendor's subkey fingerprint, is refused and nothing is written
    vendor_subkey = _fingerprints(keys["home"], "vendor@example.org", "sub")[-1]
    for source, want in ((attacker[1], vendor[0]), (vendor[1], vendor_subkey)):
        bad = _source(
            "apt-repositories.sh", "trusted_key", tmp_path, str(source), want, str(tmp_path / "x.gpg")
        )
        assert bad.returncode == 1 and not (tmp_path / "x.gpg").exists(), bad.stderr
        assert f"is not {want} (it holds: " in bad.stderr and "); not installed" in bad.stderr


def test_the_aws_cli_installer_needs_a_signature_by_the_published_key(keys, tmp_path):
    vendor, attacker = keys["vendor"], keys["attacker"]
    zip_ = tmp_path / "awscliv2.zip"
    zip_.write_bytes(b"PK installer")
    home = keys["home"]
    signing_subkey = _fingerprints(home, "vendor@example.org", "sub")[-1]
    for who, key in (("vendor", signing_subkey + "!"), ("attacker", attacker[0])):
        _gpg(home, "--local-user", key, "--output", str(tmp_path / f"{who}.sig"), "--detach-sign", str(zip_))
    env_home = tmp_path / "verify"
    env_home.mkdir(mode=0o700)
    _gpg(env_home, "--import", str(vendor[1]), str(attacker[1]))

    def signed_by(sig, path, fpr):
        run = f'. "{ROOT}/packer/scripts/aws-cli.sh"\nsigned_by "$@"\n'
        env = {"PATH": "/usr/bin:/bin", "GNUPGHOME": str(env_home), "HOME": str(tmp_path)}
        return subprocess.run(["bash", "-c", run, "aws-cli.sh", str(sig), str(path), fpr], env=env).returncode

    try:
        # made by the vendor's signing subkey: VALIDSIG names the subkey first, the primary key last
        assert signed_by(tmp_path / "vendor.sig", zip_, vendor[0]) == 0
        assert signed_by(tmp_path / "attacker.sig", zip_, vendor[0]) == 1
        zip_.write_bytes(b"PK installer, altered")
        assert signed_by(tmp_path / "vendor.sig", zip_, vendor[0]) == 1
    finally:
        subprocess.run(
            ["gpgconf", "--homedir", str(env_home), "--kill", "all"], check=False, capture_output=True
        )


def test_the_build_instance_requires_imdsv2_and_ssh_only_from_the_bake_host(tmp_path):
    """Issue 26: the build instance had IMDSv1 and SSH from anywhere (Packer's temporary group defaults to
    0.0.0.0/0). The template requires IMDSv2 with one hop and takes the SSH source from the bake; the variable
    refuses the internet; Packer 1.6 (which knows no metadata_options) may run the local bake only."""
    from provision.packer import template, variables

    text = (ROOT / "packer/gpu-worker.pkr.hcl").read_text()
    assert 'http_tokens                 = "required"' in text and "http_put_response_hop_limit = 1" in text
    assert "temporary_security_group_source_cidrs = var.ssh_source_cidrs" in text
    old = template.stage(tmp_path / "old", with_plugins=False) / "gpu-worker.pkr.hcl"
    assert (
        "metadata_options" not in old.read_text()
        and "temporary_security_group_source_cidrs" in old.read_text()
    )
    new = template.stage(tmp_path / "new", with_plugins=True) / "gpu-worker.pkr.hcl"
    assert "metadata_options" in new.read_text()
    assert variables.bake_host_cidr(lambda: "203.0.113.7\n") == "203.0.113.7/32"
    from clusterspec.errors import UserError

    with pytest.raises(UserError, match="pass --ssh-from ADDRESS"):
        variables.bake_host_cidr(lambda: "<html>")
    assert variables.ssh_source("203.0.113.7") == variables.ssh_source("203.0.113.7/32") == "203.0.113.7/32"
    for wrong, says in (
        ("0.0.0.0/0", "a range, not one address"),
        ("10.0.0.0/8", "a range"),
        ("me", "not an IPv4"),
    ):
        with pytest.raises(UserError, match=says):
            variables.ssh_source(wrong)


@pytest.mark.tool
@pytest.mark.parametrize("cidrs", [["0.0.0.0/0"], ["203.0.113.7/32", "10.0.0.0/8"], []], ids=str)
def test_packer_refuses_ssh_from_a_range(cidrs, tmp_path):
    """The template's own check (packer/variables.pkr.hcl), as Packer evaluates it: a bake by hand with a
    var file that opens SSH wider than one address is refused before anything launches."""
    from clusterspec.loader import load_spec
    from provision.packer import template
    from provision.packer.variables import packer_variables, write_var_file
    from tests.support import require_tool

    exe = require_tool("packer")
    staged = template.stage(tmp_path / "template", with_plugins=False)
    ok = packer_variables(load_spec(), "us-west-2", ssh_source_cidrs=("203.0.113.7/32",))
    run = subprocess.run([exe, "validate", "-var-file", str(write_var_file(ok, tmp_path / "ok.json")), str(staged)],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    bad = write_var_file(ok | {"ssh_source_cidrs": cidrs}, tmp_path / "bad.json")
    run = subprocess.run(
        [exe, "validate", "-var-file", str(bad), str(staged)], capture_output=True, text=True
    )
    assert run.returncode != 0 and "must each be one address as a /32" in " ".join(
        (run.stdout + run.stderr).split()
    )


def test_a_real_bake_needs_a_packer_that_can_require_imdsv2(monkeypatch, tmp_path):
    from clusterspec.errors import UserError
    from clusterspec.loader import load_spec
    from provision.packer import bake, runner

    monkeypatch.setattr(runner, "packer_path", lambda: "/usr/bin/packer")
    monkeypatch.setattr(runner, "packer_version", lambda exe: (1, 6, 6))
    with pytest.raises(UserError, match="cannot require IMDSv2 on the build instance"):
        bake.bake(load_spec(), "us-west-2", build_dir=tmp_path)
