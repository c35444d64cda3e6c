"""Prometheus and Alertmanager deployed with the cluster (docs/operations.md, "Alerts"): plain manifests
rendered from the spec, applied by `invoke up` once the API answers and by `invoke deploy-monitoring`.

Why plain manifests and not the Prometheus Operator: the operator's value is running many Prometheus and
Alertmanager instances that teams declare themselves (ServiceMonitor, PrometheusRule objects); this cluster runs
one of each, configured from one spec. The operator would add its CRDs (several MB, beyond what client-side
`kubectl apply` can store: they need server-side apply), a controller with cluster-wide rights to create
StatefulSets and Secrets, and a second place where scrape and rule configuration live. Plain manifests keep the
configuration a file that promtool checks (`promtool check config`, `promtool test rules`) before it is deployed,
run under Pod Security `restricted`, and are read by anyone who knows Prometheus. The rule files are the same YAML
the operator's PrometheusRule `spec.groups` would take, so moving to it later is a wrap, not a rewrite.

What is deployed (namespace ``monitoring``, enforcing ``restricted``): Prometheus (one replica, 15 days of data
on an emptyDir: alerts need hours of history, not months), Alertmanager (sends every alert to the primary
region's alert topic through its IRSA role, ``terraform/modules/alert_topic``), kube-state-metrics (node
conditions for NodeNotReady), and x509-certificate-exporter for the cluster's certificates (its host-path
DaemonSets in ``kube-system``: kubeadm's PKI and kubeconfigs on the control plane, the Roles Anywhere certificate
on the lab's servers).
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import yaml

from clusterspec.names import (
    ALERTMANAGER_SERVICE_ACCOUNT,
    AUTOSCALER_NAMESPACE,
    MONITORING_NAMESPACE,
    SITE_LABEL,
)
from clusterspec.spec import Cluster
from provision import checkout

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "monitoring"
OUT = REPO / "build" / "deploy" / "monitoring"
IMAGES = {  # pinned; each a project's own published image
    "prometheus": "quay.io/prometheus/prometheus:v3.5.0",
    "alertmanager": "quay.io/prometheus/alertmanager:v0.28.1",
    "kube_state_metrics": "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.16.0",
    "x509_exporter": "docker.io/enix/x509-certificate-exporter:3.19.1",
}
ADMIN_RULES = (
    "admin-certificates.rules.yaml"  # written by `invoke certificates --publish` (operations/certificates.py)
)
WATCHED_DIR = (
    "watched-certificates"  # the public certificates `invoke certificates --publish` writes, one file each
)


# The control plane's copies of its certificates, without keys (bootstrap.sh export_certificates): the only host
# folder the control plane's certificate exporter mounts (issue 36: it mounted /etc/kubernetes, keys and all).
EXPORTED_CERTIFICATES = "/etc/kubernetes/exported-certificates"


# Alertmanager's own authentication (issue 36): basic auth on its whole HTTP API (exporter-toolkit's web
# configuration, --web.config.file), the password random per cluster and kept in two Secrets of the monitoring
# namespace: its bcrypt hash for Alertmanager, the password for Prometheus (password_file). Made once by the deploy
# through kubectl's stdin, never written to a file, a log or the rendered manifests; kept on later deploys.
AUTH = {
    "username": "prometheus",
    "web_secret": "alertmanager-web",
    "web_dir": "/etc/alertmanager-web",
    "prometheus_secret": "prometheus-alertmanager-auth",
    "password_dir": "/etc/prometheus/alertmanager-auth",
    "password_file": "/etc/prometheus/alertmanager-auth/password",
}
BCRYPT_COST = 12


def bcrypt_hash(password: str) -> str:
    """``$2b$`` bcrypt, what exporter-toolkit's basic_auth_users compares with (golang.org/x/crypto/bcrypt)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # libxcrypt's bcrypt; Python 3.11's crypt module (the only bcrypt in the standard library)

    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << BCRYPT_COST))


def auth_secrets(namespace: str, password: str) -> list[dict]:
    """The two Secrets of Alertmanager's authentication for ``password``."""
    web = yaml.safe_dump({"basic_auth_users": {AUTH["username"]: bcrypt_hash(password)}})

    def secret(name: str, data: dict) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "stringData": data,
                "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "monitoring"}}}  # fmt: skip

    return [
        secret(AUTH["web_secret"], {"web.yml": web}),
        secret(AUTH["prometheus_secret"], {"password": password}),
    ]


def ensure_alertmanager_auth(kubectl: list[str], namespace: str = MONITORING_NAMESPACE) -> bool:
    """Create Alertmanager's two Secrets unless both exist (a fresh password); True when they were created. The
    password goes to kubectl on its stdin only."""
    import secrets
    import subprocess

    from clusterspec.errors import UserError

    names = [AUTH["web_secret"], AUTH["prometheus_secret"]]
    got = subprocess.run([*kubectl, "-n", namespace, "get", "secret", *names, "-o", "name", "--ignore-not-found"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    if got.returncode:
        raise UserError(
            f"kubectl get secret -n {namespace}: {(got.stderr.strip().splitlines() or ['no output'])[-1]}"
        )
    if len(got.stdout.split()) == len(names):
        return False
    body = json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": auth_secrets(namespace, secrets.token_urlsafe(32))}
    )
    done = subprocess.run([*kubectl, "apply", "--server-side", "--field-manager=research-cluster-monitoring",
                           "--force-conflicts", "-f", "-"], input=body, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode:
        raise UserError(
            f"Alertmanager's Secrets in {namespace}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}"
        )
    return True


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(checkout.require(TEMPLATES))),
        undefined=jinja2.StrictUndefined,
        variable_start_string="[[",
        variable_end_string="]]",
        block_start_string="[%",
        block_end_string="%]",
        comment_start_string="[#",
        comment_end_string="#]",
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701 - YAML, not HTML
    )


def alert_rules(cluster: Cluster) -> str:
    days = cluster.operations.certificate_warn_days
    return _env().get_template("alerts.rules.yaml.j2").render(warn_days=days, warn_s=days * 86400)


def watched(folder: Path | None = None) -> dict[str, str]:
    """The published public certificates (file name -> PEM) for the ConfigMap watched-certificates."""
    folder = folder or OUT / WATCHED_DIR
    return {p.name: p.read_text() for p in sorted(folder.glob("*.pem"))} if folder.is_dir() else {}


def values(cluster: Cluster, topic_arn: str, role_arn: str | None, admin_rules: str = "",
           watched_certificates: dict[str, str] | None = None) -> dict:  # fmt: skip
    return {
        "watched_certificates": watched_certificates or {},
        "namespace": MONITORING_NAMESPACE,
        "exported_certificates": EXPORTED_CERTIFICATES,
        "autoscaler_namespace": AUTOSCALER_NAMESPACE,
        "service_account": ALERTMANAGER_SERVICE_ACCOUNT,
        "cluster": cluster.name,
        "region": cluster.primary_region,
        "topic_arn": topic_arn,
        "role_arn": role_arn or "",
        "images": IMAGES,
        "auth": AUTH,
        "site_label": SITE_LABEL,
        "rules": {
            "alerts.rules.yaml": alert_rules(cluster),
            "cluster-autoscaler.rules.yaml": (
                checkout.require(TEMPLATES) / "cluster-autoscaler.rules.yaml"
            ).read_text(),
            ADMIN_RULES: admin_rules or "groups: []\n",
        },
    }


def _block(text: str, indent: int) -> str:
    pad = " " * indent
    return "\n".join(pad + line if line else "" for line in text.splitlines())


def render(cluster: Cluster, topic_arn: str, role_arn: str | None, admin_rules: str = "",
           watched_certificates: dict[str, str] | None = None) -> list[dict]:  # fmt: skip
    """Every object, in apply order."""
    env = _env()
    env.filters["block"] = _block
    env.filters["json"] = json.dumps
    ctx = values(cluster, topic_arn, role_arn, admin_rules, watched_certificates)
    out: list[dict] = []
    for name in ("namespace.yaml.j2", "network-policies.yaml.j2", "prometheus.yaml.j2", "alertmanager.yaml.j2",
                 "kube-state-metrics.yaml.j2", "x509-exporter.yaml.j2"):  # fmt: skip
        out += [d for d in yaml.safe_load_all(env.get_template(name).render(**ctx)) if d]
    from provision import images

    return images.pin_docs(out, cluster)


def prometheus_config(objects: list[dict]) -> str:
    """prometheus.yml out of the rendered ConfigMap (for promtool)."""
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus")
    return cm["data"]["prometheus.yml"]


def write(objects: list[dict], out: Path | None = None) -> Path:
    out = out or OUT
    out.mkdir(parents=True, exist_ok=True)
    path = out / "monitoring.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


GLOBAL_OUTPUTS = REPO / "build" / "terraform" / "global" / "outputs.json"


def topic_and_role(path: Path | None = None) -> tuple[str, str | None]:
    """``alerts_topic_arn`` and ``alertmanager_role_arn`` of the global Terraform root (``invoke up`` writes them)."""
    from clusterspec.errors import UserError

    path = path or GLOBAL_OUTPUTS
    if not path.exists():
        raise UserError(
            f"{path}: not found: the alert topic is an output of the global Terraform root; run "
            "`invoke up --region global` first (or pass --topic-arn)"
        )
    try:
        data = json.loads(path.read_text())
        topic = data["alerts_topic_arn"]["value"]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path}: no alerts_topic_arn output; run `invoke up --region global`") from None
    return topic, (data.get("alertmanager_role_arn") or {}).get("value")


def deploy(cluster: Cluster, topic_arn: str | None = None, dry_run: bool = False, kubectl: str | None = None,
           admin_rules: Path | None = None) -> Path:  # fmt: skip
    """Render build/deploy/monitoring/monitoring.yaml and apply it (server-side, one field manager)."""
    from provision import kubectl as kubectl_cli

    role = None
    if topic_arn is None:
        topic_arn, role = topic_and_role()
    rules = admin_rules if admin_rules is not None else OUT / ADMIN_RULES
    path = write(render(cluster, topic_arn, role, rules.read_text() if rules.exists() else "", watched()))
    if dry_run:
        return path
    from provision import images

    exe = kubectl_cli.ready(path, kubectl)
    images.check_pinned(path, cluster=cluster)
    kubectl_cli.apply(exe, path, field_manager="research-cluster-monitoring")
    ensure_alertmanager_auth([exe])  # after the namespace exists; the pods start once their Secrets do
    return path
