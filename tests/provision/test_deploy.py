"""The autoscaler's deployment: manifests rendered from the spec (validated offline, strict) and the Dockerfile
(checked statically: no Docker engine runs here)."""

from __future__ import annotations

import json
import re
from importlib.metadata import distribution, packages_distributions

import kubernetes_validate
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autoscaler.cli import build_parser
from autoscaler.options import COMMON, RUN, resolve
from clusterspec.errors import UserError
from clusterspec.loader import load_spec, spec_from_data
from provision import deploy, kubectl
from tests.support import ROOT, example_spec_data, set_path

ARN = "arn:aws:iam::123456789012:role/dlr-autoscaler"


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture(scope="module")
def docs(spec):
    return deploy.render(spec, ARN)


def kinds(docs) -> dict[str, dict]:
    return {d["kind"]: d for d in docs}


def test_every_manifest_passes_strict_validation(docs, spec):
    version = spec.kubernetes.minor + ".0"
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)  # raises on any problem
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                         "RoleBinding", "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy"]  # fmt: skip


def test_the_written_file_passes_the_validator_cli(spec, tmp_path):
    import subprocess

    path = deploy.write(spec, ARN, tmp_path / "autoscaler.yaml")
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "kubernetes-validate"), "--strict", "--quiet", "-k", spec.kubernetes.minor + ".0",
         str(path)], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_rbac_is_least_privilege(docs):
    rules = {d["kind"]: d["rules"] for d in docs if d["kind"] in ("ClusterRole", "Role")}
    for rule in rules["ClusterRole"] + rules["Role"]:
        for key in ("verbs", "resources", "apiGroups"):
            assert "*" not in rule.get(key, []), rule
    granted = {(g, r, v) for rule in rules["ClusterRole"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}  # fmt: skip
    assert granted == {
        ("", "pods", "list"), ("", "pods", "watch"), ("", "pods/eviction", "create"),
        ("", "nodes", "get"), ("", "nodes", "list"), ("", "nodes", "watch"), ("", "nodes", "patch"),
        ("", "nodes", "delete"), ("policy", "poddisruptionbudgets", "list"),
        ("policy", "poddisruptionbudgets", "watch"), ("", "events", "create"), ("", "events", "patch"),
        ("", "persistentvolumeclaims", "list"), ("", "persistentvolumeclaims", "watch"),
        ("", "persistentvolumes", "list"), ("", "persistentvolumes", "watch"),
        ("storage.k8s.io", "storageclasses", "list"), ("storage.k8s.io", "storageclasses", "watch"),
    }  # fmt: skip
    named = [r for r in rules["Role"] if "resourceNames" in r]
    assert {n for r in named for n in r["resourceNames"]} == {
        "research-autoscaler-state", "research-autoscaler-status", "research-autoscaler"}  # fmt: skip
    assert all(set(r["verbs"]) == {"create"} for r in rules["Role"] if "resourceNames" not in r)


def test_the_deployment_runs_two_hardened_replicas_with_leader_election(docs):
    dep = kinds(docs)["Deployment"]
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert "--leader-elect" in container["args"] and "--metrics-port=8085" in container["args"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] and sc["runAsNonRoot"] and not sc["allowPrivilegeEscalation"]
    assert sc["capabilities"]["drop"] == ["ALL"] and pod["securityContext"]["runAsUser"] != 0
    assert {m["mountPath"] for m in container["volumeMounts"]} == {
        "/tmp", "/var/run/secrets/eks.amazonaws.com/serviceaccount"}  # fmt: skip
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    pdb, svc = kinds(docs)["PodDisruptionBudget"], kinds(docs)["Service"]
    assert pdb["spec"]["minAvailable"] == 1
    assert (
        pdb["spec"]["selector"]["matchLabels"]
        == dep["spec"]["selector"]["matchLabels"]
        == svc["spec"]["selector"]
    )
    assert svc["spec"]["ports"][0]["port"] == 8085


def test_the_arguments_are_the_specs_settings_as_the_cli_reads_them(docs, spec):
    container = kinds(docs)["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    parsed = build_parser().parse_args(container["args"])
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    opts = resolve(parsed, COMMON + RUN, environ=env)
    s = spec.autoscaler
    assert opts["cluster_name"] == "dlr" and opts["regions"] == spec.spill_over_order
    assert (opts["scan_interval"], opts["idle_threshold"], opts["boot_timeout"]) == (
        s.scan_interval_s, s.idle_threshold_s, s.boot_timeout_s)  # fmt: skip
    assert opts["max_scale_in_fraction"] == s.max_scale_in_fraction
    assert opts["max_new_nodes"] == s.max_new_nodes_per_loop and opts["priority_cutoff"] == s.priority_cutoff
    assert opts["spare_gpus"] == s.spare_gpus == 8
    assert opts["warm_pool"] == {f"dlr-{r}-gpu-t4": 1 for r in spec.spill_over_order}
    assert opts["leader_elect"] is True and opts["dry_run"] is False


def test_settings_changed_in_the_spec_reach_the_deployment():
    data = example_spec_data()
    set_path(data, "autoscaler.scan_interval_s", 30)
    set_path(data, "autoscaler.image", "registry.example/autoscaler:1.2.3")
    set_path(data, "spill_over", ["us-east-1", "us-west-2", "us-east-2"])
    dep = kinds(deploy.render(spec_from_data(data, "test"), None))["Deployment"]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/autoscaler:1.2.3"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "--scan-interval=30s" in container["args"]
    assert (
        env["AUTOSCALER_REGIONS"] == "us-east-1,us-west-2,us-east-2"
        and env["AUTOSCALER_CLUSTER_NAME"] == "dlr"
    )


def test_the_pod_assumes_the_terraform_role(tmp_path, spec):
    outputs = tmp_path / "outputs.json"
    with pytest.raises(UserError, match=r"outputs.json: not found: .*run `invoke up --region global`"):
        deploy.role_arn(outputs)
    outputs.write_text(
        json.dumps({"autoscaler_role_arn": {"value": ARN, "type": "string", "sensitive": False}})
    )
    assert deploy.role_arn(outputs) == ARN

    def env(arn):
        container = kinds(deploy.render(spec, arn))["Deployment"]["spec"]["template"]["spec"]["containers"][0]
        return {e["name"]: e.get("value") for e in container["env"]}

    assert env(ARN)["AWS_ROLE_ARN"] == ARN
    assert "AWS_ROLE_ARN" not in env(None)
    outputs.write_text(json.dumps({"other": {"value": 1}}))
    with pytest.raises(UserError, match="no autoscaler_role_arn output"):
        deploy.role_arn(outputs)
    outputs.write_text(json.dumps({"autoscaler_role_arn": {"value": "arn:aws:iam::1:user/x"}}))
    with pytest.raises(UserError, match="is not an IAM role ARN"):
        deploy.role_arn(outputs)


SECRETS = re.compile(r"AKIA[0-9A-Z]{16}|aws_secret_access_key|hooks\.slack\.com|BEGIN (RSA |EC )?PRIVATE KEY|"
                     r"password\s*[:=]", re.I)  # fmt: skip


def test_no_secret_in_the_rendered_manifests_or_the_image(docs):
    assert not SECRETS.search(deploy.dump(docs))
    for path in (ROOT / "deploy").rglob("*"):
        if path.is_file():
            assert not SECRETS.search(path.read_text()), path


DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text()


def test_the_dockerfile_is_pinned_slim_and_non_root():
    bases = re.findall(r"^FROM\s+(\S+)", DOCKERFILE, re.M)
    assert bases and all(re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", b) for b in bases), bases
    [user] = re.findall(r"^USER\s+(\S+)", DOCKERFILE, re.M)
    assert user.split(":")[0] not in ("0", "root")
    assert re.findall(r"^ENTRYPOINT \[\"autoscaler\"\]", DOCKERFILE, re.M)
    assert (
        "pip install --require-hashes --only-binary=:all: --no-deps -r deploy/requirements.txt" in DOCKERFILE
    )
    assert (
        "pip install --require-hashes --only-binary=:all: --no-deps -r deploy/build-requirements.txt"
        in DOCKERFILE
    )
    assert (
        "--no-deps --no-build-isolation --no-index ." in DOCKERFILE
    )  # the package builds with nothing downloaded
    assert not re.search(r"^(ARG|ENV)\s+\S*(SECRET|TOKEN|PASSWORD|KEY)", DOCKERFILE, re.M | re.I)
    ignore = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().split()
    assert ignore[ignore.index("*") :][:2] == ["*", "!pyproject.toml"], "the build context is an allow-list"
    assert {"!deploy/requirements.txt", "!deploy/build-requirements.txt"} <= set(ignore)


def _locked(name: str) -> dict[str, tuple[str, list[str]]]:
    """A requirements file as pip reads it (backslash continuations joined): name => (pin line, its hashes)."""
    text = (ROOT / "deploy" / name).read_text().replace("\\\n", " ")
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        spec, *options = line.split(" --")
        out[spec.strip()] = (spec.strip(), [o.strip() for o in options])
    return out


def _pins() -> dict[str, str]:
    reqs = [Requirement(spec) for spec in _locked("requirements.txt")]
    assert all(len(r.specifier) == 1 and next(iter(r.specifier)).operator == "==" for r in reqs)
    return {canonicalize_name(r.name): next(iter(r.specifier)).version for r in reqs}


def test_the_image_requirements_are_pinned_and_closed():
    pins = _pins()
    for root in ("kubernetes", "boto3", "tenacity", "prometheus-client", "pyyaml"):
        assert root in pins
    for name in pins:
        for raw in distribution(name).requires or []:
            req = Requirement(raw)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            assert canonicalize_name(req.name) in pins, f"{name} needs {req.name}, which is not pinned"
    project = (ROOT / "pyproject.toml").read_text()
    for name in ("kubernetes", "boto3", "tenacity", "prometheus-client", "PyYAML"):
        assert name in project


def test_the_image_carries_every_package_its_commands_import():
    """The image holds what ``autoscaler <command>`` imports, transitively: each of our packages is copied in and
    let through the build context's allow-list, each third-party one is pinned (a package left out is a
    ModuleNotFoundError at the pod's first start, which no other test would see)."""
    import grimp

    from autoscaler.commands import COMMANDS

    graph = grimp.build_graph(
        "autoscaler", "clusterspec", "provision", "labctl", include_external_packages=True
    )
    used: set[str] = set()
    for name in COMMANDS:
        module = f"autoscaler.commands.{name}"
        used |= {module, *graph.find_upstream_modules(module)}
    tops = {m.split(".")[0] for m in used}
    ours = {t for t in tops if (ROOT / t / "__init__.py").exists()}
    assert ours == {"autoscaler", "clusterspec"}, ours
    ignore = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().split()
    for package in ours:
        assert re.search(rf"^COPY {package} \./{package}$", DOCKERFILE, re.M), (
            f"the Dockerfile copies no {package}/"
        )
        assert f"!{package}/" in ignore, f"the build context leaves out {package}/"
    pins = _pins()
    dists = packages_distributions()
    third_party = {t for t in tops - ours if t in dists}
    assert {"kubernetes", "boto3", "pydantic", "yaml", "msgspec"} <= third_party
    for top in third_party:
        assert any(canonicalize_name(d) in pins for d in dists[top]), (
            f"the image needs {top}, which is not pinned"
        )


def test_deploy_templates_exist_for_every_rendered_part():
    assert sorted(p.name for p in deploy.TEMPLATES.glob("*.yaml.j2")) == sorted(
        f"{n}.yaml.j2" for n in deploy.ORDER
    )


def test_the_invoke_task_exits_non_zero_when_nothing_was_deployed(capsys, monkeypatch):
    """It used to print the manifests and exit 0 when no cluster was reachable (issue 16)."""
    from invoke import Context
    from invoke.exceptions import Exit

    import tasks

    monkeypatch.setattr(kubectl.shutil, "which", lambda _name: None)  # no kubectl, whatever the machine has
    with pytest.raises(Exit) as exit_:
        tasks.deploy_autoscaler(Context(), dry_run=False, role_arn=ARN)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("kubectl: not found on the PATH: nothing was deployed")
    tasks.deploy_autoscaler(Context(), dry_run=True, role_arn=ARN)
    out = capsys.readouterr().out
    assert out.startswith("apiVersion: v1\nkind: Namespace") and f"value: {ARN}" in out


BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError("not in the image: " + name)
sys.meta_path.insert(0, Blocker())
sys.argv = ["autoscaler"] + sys.argv[2:]
from autoscaler.cli import main
sys.exit(main())
"""


def test_the_image_command_needs_nothing_beyond_its_requirements(tmp_path):
    """Run ``autoscaler`` with every installed package that the image lacks made unimportable."""
    import subprocess
    import sys
    from importlib.metadata import packages_distributions

    pins = _pins()
    copied = set(re.findall(r"^COPY (\w+) \./\1$", DOCKERFILE, re.M))
    assert copied == {"autoscaler", "clusterspec"}
    blocked = {"provision", "labctl"} | {
        name
        for name, dists in packages_distributions().items()
        if name.isidentifier() and name not in copied
        and not any(canonicalize_name(d) in pins for d in dists)
    }  # fmt: skip
    assert {"moto", "jinja2", "invoke", "provision", "labctl"} <= blocked
    script = tmp_path / "image_autoscaler.py"
    script.write_text(BLOCKER)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))  # fmt: skip
    argv = [sys.executable, str(script), ",".join(sorted(blocked)), "run", "--cluster-name", "dlr",
            "--regions", "us-west-2", "--kubeconfig", str(kubeconfig), "--once", "--dry-run"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "cannot list from the Kubernetes API at http://127.0.0.1:9"
    )


@pytest.mark.parametrize("name", ["requirements.txt", "build-requirements.txt"])
def test_the_image_requirements_carry_their_hashes(name):
    """Issue 26: pip's hash-checking mode needs a hash for every file it may pick; each pin lists the SHA-256 of
    its wheels (one for a pure wheel, one per platform for a compiled one: x86_64 and aarch64), and nothing else."""
    locked = _locked(name)
    assert locked
    for spec, options in locked.values():
        hashes = [o for o in options if o.startswith("hash=")]
        assert hashes and hashes == options, spec
        assert all(re.fullmatch(r"hash=sha256:[0-9a-f]{64}", h) for h in hashes), spec
        assert len(set(hashes)) == len(hashes) <= 2, spec


def test_pip_refuses_a_file_whose_hash_is_not_listed(tmp_path):
    """The install line of the Dockerfile, run by pip on a wheel made here: the listed hash installs, any other
    content of the same name and version is refused (pip's "THESE PACKAGES DO NOT MATCH THE HASHES")."""
    import hashlib
    import subprocess
    import sys
    import zipfile

    def wheel(content: str):
        path = tmp_path / "wheels" / "tinydep-1.0-py3-none-any.whl"
        path.parent.mkdir(exist_ok=True)
        meta = "tinydep-1.0.dist-info"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("tinydep.py", content)
            z.writestr(f"{meta}/METADATA", "Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n")
            z.writestr(
                f"{meta}/WHEEL",
                "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            )
            z.writestr(f"{meta}/RECORD", "")
        return hashlib.sha256(path.read_bytes()).hexdigest()

    good = wheel("X = 1\n")
    req = tmp_path / "requirements.txt"
    req.write_text(f"tinydep==1.0 \\\n    --hash=sha256:{good}\n")
    pip = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--require-hashes", "--only-binary=:all:",
           "--no-deps", "--no-index", "--find-links", str(tmp_path / "wheels"), "-r", str(req)]  # fmt: skip
    ok = subprocess.run(pip, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wheel("X = 'altered'\n")
    bad = subprocess.run(pip, capture_output=True, text=True)
    assert bad.returncode != 0 and "DO NOT MATCH THE HASHES" in bad.stdout + bad.stderr
