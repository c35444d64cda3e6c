"""``lab ssh-config``: SSH entries for the cluster's SSH machines, in an include file of their own.

The entries go to ``~/.ssh/lab_config`` (rewritten whole each time); ``~/.ssh/config`` only gains one
``Include lab_config`` line at its top, added once and never anything else (OpenSSH reads the first value of
each option, so an Include at the top lets the user's own Host blocks keep working as before).
The machines are reached by their private DNS names in the cluster's zone (``<group>-<n>.ssh.<domain>``,
Terraform module ssh_machines), only over the Client VPN.
"""

from __future__ import annotations

from pathlib import Path

from clusterspec.spec import Cluster

INCLUDE = "Include lab_config"


def host_names(spec: Cluster) -> list[tuple[str, str]]:
    """(alias, DNS name) of each SSH machine."""
    out = []
    for g in spec.researchers.ssh_machines:
        for i in range(1, g.count + 1):
            out.append((f"{spec.name}-{g.name}-{i}", f"{g.name}-{i}.ssh.{spec.domain}"))
    return out


def idle_hint(spec: Cluster) -> str | None:
    """What a researcher needs to know when a machine does not answer: it stopped itself while idle (issue 29,
    docs/operations.md "Cost"), and how it starts again."""
    minutes = spec.operations.ssh_idle_stop_min
    if not minutes:
        return None
    return (
        f"The machines stop after {minutes} minutes with no SSH session and no GPU or CPU use; a stopped one does "
        "not answer: start it with `invoke ssh-start <group>-<n>` (an admin, or anyone allowed ec2:StartInstances "
        "on it), about a minute."
    )


def entries(spec: Cluster, user: str, identity: str | None = None) -> str:
    lines = [f"# Written by `lab ssh-config` for cluster {spec.name}; rewritten whole on each run."]
    if hint := idle_hint(spec):
        lines.append(f"# {hint}")
    lines.append("")
    for alias, dns in host_names(spec):
        name = dns.split(".ssh.", 1)[0]
        if hint:
            lines.append(f"# stopped? invoke ssh-start {name}")
        lines += [f"Host {alias}", f"  HostName {dns}", f"  User {user}", "  ForwardAgent no"]
        if identity:
            lines.append(f"  IdentityFile {identity}")
        lines.append("")
    return "\n".join(lines)


def write(spec: Cluster, user: str, ssh_dir: Path, identity: str | None = None) -> Path:
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    include = ssh_dir / "lab_config"
    include.write_text(entries(spec, user, identity))
    include.chmod(0o600)
    main = ssh_dir / "config"
    text = main.read_text() if main.exists() else ""
    if not any(line.strip() == INCLUDE for line in text.splitlines()):
        main.write_text(f"{INCLUDE}\n\n{text}" if text else f"{INCLUDE}\n")
        main.chmod(0o600)
    return include
