"""``lab ssh-config``: SSH entries for the cluster's SSH machines, in an include file of their own.

The entries go to ``~/.ssh/lab_config`` (rewritten whole each time); ``~/.ssh/config`` only gains one
``Include lab_config`` line at its top, added once and never anything else (OpenSSH reads the first value of
each option, so an Include at the top lets the user's own Host blocks keep working as before).
The machines are reached by their private DNS names in the cluster's zone (``<group>-<n>.ssh.<domain>``,
Terraform module ssh_machines), only over the Client VPN; their list comes from the cluster's settings
(clusterspec/lab_settings.py) and the user name from the kubeconfig's identity (the API server's SelfSubjectReview,
else the client certificate's CN), which is the researcher's login on the machines.
"""

from __future__ import annotations

from pathlib import Path

from clusterspec.lab_settings import LabSettings

INCLUDE = "Include lab_config"


def host_names(settings: LabSettings) -> list[tuple[str, str]]:
    """(alias, DNS name) of each SSH machine."""
    return list(settings.ssh_machines)


def idle_hint(settings: LabSettings) -> str | None:
    """What a researcher needs to know when a machine does not answer: it stopped itself while idle (issue 29,
    docs/operations.md "Cost"), and how it starts again."""
    minutes = settings.ssh_idle_stop_min
    if not minutes:
        return None
    return (
        f"The machines stop after {minutes} minutes with no SSH session and no GPU or CPU use; a stopped one does "
        "not answer: start it with `invoke ssh-start <group>-<n>` (an admin, or anyone allowed ec2:StartInstances "
        "on it), about a minute."
    )


def entries(settings: LabSettings, user: str, identity: str | None = None) -> str:
    lines = [f"# Written by `lab ssh-config` for cluster {settings.cluster}; rewritten whole on each run."]
    if hint := idle_hint(settings):
        lines.append(f"# {hint}")
    lines.append("")
    for alias, dns in host_names(settings):
        name = dns.split(".ssh.", 1)[0]
        if hint:
            lines.append(f"# stopped? invoke ssh-start {name}")
        lines += [f"Host {alias}", f"  HostName {dns}", f"  User {user}", "  ForwardAgent no"]
        if identity:
            lines.append(f"  IdentityFile {identity}")
        lines.append("")
    return "\n".join(lines)


def write(settings: LabSettings, user: str, ssh_dir: Path, identity: str | None = None) -> Path:
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    include = ssh_dir / "lab_config"
    include.write_text(entries(settings, user, identity))
    include.chmod(0o600)
    main = ssh_dir / "config"
    text = main.read_text() if main.exists() else ""
    if not any(line.strip() == INCLUDE for line in text.splitlines()):
        main.write_text(f"{INCLUDE}\n\n{text}" if text else f"{INCLUDE}\n")
        main.chmod(0o600)
    return include


def certificate_user(kubeconfig: str | None, context: str | None = None) -> str | None:
    """The CN of the kubeconfig's client certificate (the user the API server authenticates), read locally."""
    import base64
    import os

    import yaml
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    path = Path(kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    name = context or data.get("current-context")
    ctx = next((c.get("context") or {} for c in data.get("contexts") or () if c.get("name") == name), {})
    user = next(
        (u.get("user") or {} for u in data.get("users") or () if u.get("name") == ctx.get("user")), {}
    )
    pem = None
    if user.get("client-certificate-data"):
        pem = base64.b64decode(user["client-certificate-data"])
    elif user.get("client-certificate"):
        pem = Path(user["client-certificate"]).read_bytes()
    if not pem:
        return None
    cert = x509.load_pem_x509_certificate(pem)
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[0].value) if cns else None
