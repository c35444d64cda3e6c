"""Alertmanager's own authentication (issue 36: Alertmanager answered every pod and every VPN laptop, so anyone
could silence every alert). The deploy makes the two Secrets through the real API server (the local stack), once;
the hash it stores is checked with golang.org/x/crypto/bcrypt, what Alertmanager's web configuration compares with
(prometheus/exporter-toolkit); the rendered Alertmanager and Prometheus use exactly those Secrets and paths."""

from __future__ import annotations

import base64
import json
import subprocess
import textwrap

import pytest
import yaml

from clusterspec.loader import load_spec
from provision import monitoring
from provision.monitoring import AUTH
from tests.support import require_tool

SPEC = load_spec()


def _secrets(kube, ns: str) -> dict[str, dict[str, str]]:
    out = {}
    for name in (AUTH["web_secret"], AUTH["prometheus_secret"]):
        got = json.loads(kube.kubectl("-n", ns, "get", "secret", name, "-o", "json", check=True).stdout)
        out[name] = {k: base64.b64decode(v).decode() for k, v in got["data"].items()}
    return out


def _go_bcrypt_accepts(tmp_path, hashed: str, password: str) -> bool:
    go = require_tool("go")
    (tmp_path / "go.mod").write_text("module check\n\ngo 1.24\n\nrequire golang.org/x/crypto v0.45.0\n")
    (tmp_path / "main.go").write_text(
        textwrap.dedent("""\
        package main

        import (
            "os"

            "golang.org/x/crypto/bcrypt"
        )

        func main() {
            if bcrypt.CompareHashAndPassword([]byte(os.Args[1]), []byte(os.Args[2])) != nil {
                os.Exit(1)
            }
        }
    """)
    )
    env = {"PATH": "/usr/local/go/bin:/usr/bin:/bin", "HOME": str(tmp_path), "GOPROXY": "off", "GOFLAGS": "-mod=mod",
           "GONOSUMDB": "*", "GOSUMDB": "off", "GOTOOLCHAIN": "local",
           "GOPATH": subprocess.run([go, "env", "GOPATH"], capture_output=True, text=True).stdout.strip(),
           "GOCACHE": subprocess.run([go, "env", "GOCACHE"], capture_output=True, text=True).stdout.strip()}  # fmt: skip
    tidy = subprocess.run(
        [go, "mod", "tidy"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    if tidy.returncode:
        pytest.skip(f"golang.org/x/crypto is not in the module cache: {tidy.stderr.strip()[-200:]}")
    done = subprocess.run([go, "run", ".", hashed, password], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.returncode == 0


def test_the_deploy_makes_alertmanagers_password_once_through_the_api(kube, tmp_path):
    ns = kube.namespace("mon")
    from localcluster import binaries

    kubectl = [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig)]
    assert monitoring.ensure_alertmanager_auth(kubectl, ns) is True
    first = _secrets(kube, ns)
    web = yaml.safe_load(first[AUTH["web_secret"]]["web.yml"])
    password = first[AUTH["prometheus_secret"]]["password"]
    assert len(password) >= 40 and set(web) == {"basic_auth_users"}
    hashed = web["basic_auth_users"][AUTH["username"]]
    assert hashed.startswith("$2b$12$") and password not in first[AUTH["web_secret"]]["web.yml"]
    # a second deploy keeps the password Prometheus and the operators hold
    assert monitoring.ensure_alertmanager_auth(kubectl, ns) is False
    assert _secrets(kube, ns) == first
    # the receiver's own check: Go's bcrypt accepts the password and refuses another
    assert _go_bcrypt_accepts(tmp_path, hashed, password)
    assert not _go_bcrypt_accepts(tmp_path, hashed, password + "x")


def _rendered(kind: str, name: str) -> dict:
    docs = monitoring.render(SPEC, "arn:aws:sns:us-west-2:123456789012:dlr-alerts", None)
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def test_alertmanager_asks_for_the_password_and_prometheus_gives_it():
    """On today's main Alertmanager ran with no --web.config.file: its API (silences included) answered anyone."""
    pod = _rendered("Deployment", "alertmanager")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert f"--web.config.file={AUTH['web_dir']}/web.yml" in container["args"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (web,) = [n for n, path in mounts.items() if path == AUTH["web_dir"]]
    assert volumes[web]["secret"]["secretName"] == AUTH["web_secret"]
    assert "httpGet" not in container["readinessProbe"]  # every HTTP path asks for the password
    prom_pod = _rendered("Deployment", "prometheus")["spec"]["template"]["spec"]
    (prom,) = prom_pod["containers"]
    prom_volumes = {v["name"]: v for v in prom_pod["volumes"]}
    (auth,) = [m for m in prom["volumeMounts"] if m["mountPath"] == AUTH["password_dir"]]
    assert prom_volumes[auth["name"]]["secret"]["secretName"] == AUTH["prometheus_secret"]
    config = yaml.safe_load(_rendered("ConfigMap", "prometheus")["data"]["prometheus.yml"])
    (am,) = config["alerting"]["alertmanagers"]
    scrape = next(j for j in config["scrape_configs"] if j["job_name"] == "alertmanager")
    for block in (am, scrape):
        assert block["basic_auth"] == {
            "username": AUTH["username"],
            "password_file": f"{AUTH['password_dir']}/password",
        }
    # no password or hash in anything rendered
    text = yaml.safe_dump_all(monitoring.render(SPEC, "arn:aws:sns:us-west-2:123456789012:dlr-alerts", None))
    assert "$2b$" not in text and "basic_auth_users" not in text
