"""IMDSv2 only, hop limit 1, on every launch template and instance: a pod's packets to 169.254.169.254 cross one
more hop (the pod's network namespace) and so never reach the node's role (EC2 User Guide, "Configure the
instance metadata options": a hop limit of 1 keeps the token response from leaving the instance)."""

from tests.provision.terraform.tf_files import MODULES, all_resources, module_dirs


def test_every_launch_template_and_instance_requires_tokens_with_hop_limit_1():
    checked = []
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            if rtype not in ("aws_launch_template", "aws_instance"):
                continue
            (options,) = body.get("metadata_options") or [None]
            assert options, f"{module.name}: {rtype}.{name} has no metadata_options"
            assert options.get("http_tokens") == "required", f"{module.name}: {rtype}.{name}"
            assert options.get("http_put_response_hop_limit") == 1, f"{module.name}: {rtype}.{name}"
            assert options.get("http_endpoint", "enabled") == "enabled"
            checked.append(f"{module.name}.{name}")
    assert {"node_group.this", "control_plane.member"} <= set(checked)


SSH_USER_DATA = MODULES / "ssh_machines" / "templates" / "ssh.sh.tftpl"
_IMDS_NETNS = r"""
set -e
ip link set lo up
ip addr add 169.254.169.254/32 dev lo
nft -f "$1"
/usr/bin/python3 -m http.server 80 --bind 169.254.169.254 >/dev/null 2>&1 &
trap 'kill $!' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/169.254.169.254/80) 2>/dev/null && break; sleep 0.1; done
get='import sys, urllib.request
try:
    print(urllib.request.urlopen("http://169.254.169.254/latest/api/token", timeout=2).status)
except Exception as e:
    print(type(e).__name__)'
echo "root $(/usr/bin/python3 -c "$get")"
echo "researcher $(setpriv --reuid=2001 --regid=2001 --clear-groups /usr/bin/python3 -c "$get")"
"""


def test_on_the_ssh_machines_only_root_reaches_the_instance_metadata(tmp_path):
    """The nftables rules the SSH machines' user data loads, in a network namespace of this machine with a stand-in
    for 169.254.169.254: root gets an answer, a researcher's uid is refused (issue 36)."""
    import re
    import shutil
    import subprocess

    import pytest

    text = SSH_USER_DATA.read_text()
    (rules,) = re.findall(r"<<'IMDS_ROOT_ONLY'\n(.*?)\nIMDS_ROOT_ONLY\n", text, re.S)
    assert "systemctl enable --now imds-root-only.service" in text  # loaded at every boot, not only the first
    (tmp_path / "imds.nft").write_text(rules + "\n")
    (tmp_path / "run.sh").write_text(_IMDS_NETNS)
    if not all(shutil.which(t) for t in ("unshare", "nft", "ip", "setpriv")):
        pytest.skip("needs unshare, nft, ip and setpriv")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {probe.stderr.decode().strip()}")
    done = subprocess.run(["unshare", "-n", "bash", str(tmp_path / "run.sh"), str(tmp_path / "imds.nft")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "root 404" in done.stdout or "root HTTPError" in done.stdout, (
        done.stdout
    )  # answered (no such file)
    assert "researcher URLError" in done.stdout, done.stdout  # refused before it left the machine
