"""alice on the run's shared real control plane (`alice`: `invoke add-user` under a namespace prefix of the test's
own, the lab settings published as `invoke up` publishes them), a moto S3 server on loopback as the cluster's bucket,
and the real local cluster of the end-to-end tests (`real_lab`)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
import yaml

from clusterspec.loader import load_spec
from provision import lab_settings

BUCKET = "dlr-results-123456789012"


@pytest.fixture(scope="session")
def s3_url():
    """A moto server on loopback: the cluster's results bucket."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def make_bucket(s3_url: str) -> None:
    """The bucket, again if an in-process ``mock_aws`` (same backend as the server) reset it."""
    s3 = boto3.client("s3", endpoint_url=s3_url, region_name="us-west-2", aws_access_key_id="x",
                      aws_secret_access_key="x")  # fmt: skip
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})


REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com"


@dataclass
class Alice:
    """alice on the run's shared real control plane: her namespace (``invoke add-user`` made it, under a namespace
    prefix of this test's own), her kubeconfig from the CSR API, the lab settings published for this test."""

    kube: object  # localcluster.shared.Cluster
    spec: object  # the spec with this test's namespace prefix
    namespace: str
    kubeconfig: str
    s3_url: str

    def kubectl(self, *args: str, input: str | None = None, check: bool = True):
        return self.kube.kubectl("-n", self.namespace, *args, input=input, check=check)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        done = self.kube.kubectl("-n", namespace or self.namespace, "get", kind, name, "-o", "json")
        return json.loads(done.stdout) if done.returncode == 0 else None

    def items(self, kind: str, selector: str | None = None) -> list[dict]:
        args = ["get", kind, "-o", "json", *(["-l", selector] if selector else [])]
        return json.loads(self.kubectl(*args).stdout)["items"]

    def objects(self) -> dict[str, int]:
        """What researchers' commands made: objects in alice's namespace (add-user's own not counted apart)."""
        return {k: len(self.items(k)) for k in KINDS}

    def wait(self, what: str, probe, timeout_s: float = 60.0):
        """``probe()`` until it is truthy: the real controllers act in their own time (bounded, not timed)."""
        deadline = time.monotonic() + timeout_s
        while not (got := probe()):
            if time.monotonic() > deadline:
                left = self.kubectl("get", ",".join(KINDS), "-o", "name", check=False).stdout
                events = self.kubectl(
                    "get", "events", "-o", "custom-columns=R:.reason,M:.message", check=False
                )
                raise AssertionError(
                    f"{what}: not after {timeout_s} s; there:\n{left}events:\n{events.stdout}"
                )
            time.sleep(0.3)
        return got

    def node(self, group: str, gpus: int = 0) -> str:
        """A kwok node of the spec's group ``group`` (its labels and taints, as it registers; initialised and
        Ready, kwok keeps it so), named for this test; deleted with the test."""
        from localcluster import nodes, stack

        g = next(g for g in groups(self.spec) if g["name"] == group)
        body = nodes.node_body(g, self.kube.unique("i"), f"{g['region']}a", uninitialized=False)
        name = body["metadata"]["name"]
        body["metadata"]["labels"][stack.KWOK_LABEL] = "fake"
        if gpus:
            body["status"]["capacity"]["nvidia.com/gpu"] = body["status"]["allocatable"]["nvidia.com/gpu"] = (
                str(gpus)
            )
        del body["status"]["conditions"]
        self.kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        self._nodes.append(name)
        self.wait(f"node {name} Ready", lambda: _ready(self.kube, name), 30)
        return name

    def claims_bound(self) -> None:
        """Until kube-controller-manager's binder has bound alice's volume claims (those `invoke up` made volumes
        for): a pod that mounts an unbound claim is not scheduled."""
        wanted = set(self.spec.researchers.volumes)
        self.wait("alice's claims bound", lambda: wanted <= {
            c["metadata"]["name"] for c in self.items("pvc") if c.get("status", {}).get("phase") == "Bound"})  # fmt: skip

    _nodes: list = field(default_factory=list)


KINDS = ("jobs", "pods", "services", "networkpolicies", "configmaps", "podgroups.scheduling.x-k8s.io")


def _ready(kube, name: str) -> bool:
    done = kube.kubectl("get", "node", name, "-o", "json")
    conds = json.loads(done.stdout).get("status", {}).get("conditions") or [] if done.returncode == 0 else []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def groups(spec) -> list[dict]:
    """The spec's node groups as their nodes register (name, region, instance type, labels, taints)."""
    from simulator.model.spec_groups import groups_from_spec

    return groups_from_spec(spec.model_dump(mode="json"))


def _prefixed(prefix: str):
    spec = load_spec()
    return spec.model_copy(
        update={"researchers": spec.researchers.model_copy(update={"namespace_prefix": prefix})}
    )


@pytest.fixture
def alice(kube, s3_url, tmp_path: Path):
    """alice added by `invoke add-user` on the shared control plane, the PodGroup CRD and the tenancy objects applied
    (`invoke deploy-scheduler`, `deploy-tenancy`), her results volume bound (what `invoke up` deploys), and the lab
    settings published with this run's moto S3 as the bucket's endpoint. The settings are the cluster's one fixed
    ConfigMap: the test holds it (``kube.singleton``) while it runs."""
    from kubernetes import config as kconfig

    from provision import storage, tenancy, users
    from provision.scheduler import podgroup_crd

    make_bucket(s3_url)
    spec = _prefixed(kube.unique("u") + "-")
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=research-cluster-scheduler",
                 "-f", str(podgroup_crd(spec)), check=True)  # fmt: skip
    # `invoke deploy-tenancy`'s roles and admission policies (its DaemonSets would only run on this test's nodes)
    kinds = ("ClusterRole", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    docs = [
        d
        for d in tenancy.cluster_objects(spec)
        if d["kind"] in kinds and d["metadata"]["name"] != "kube-router"
    ]
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=research-cluster-tenancy",
                 "-f", "-", input=yaml.safe_dump_all(docs), check=True)  # fmt: skip
    efs = storage.EfsVolumes("fs-0123456789abcdef0", {u.name: {"home": "fsap-1", "results": "fsap-2"}
                                                      for u in spec.users}, "fsap-3")  # fmt: skip
    pvs = storage.volumes(spec, "alice", efs)
    with kube.singleton("lab-settings"):
        for (
            pv
        ) in pvs:  # before the claims: the binder binds a claim to its pre-bound volume as the claim comes
            kube.kubectl("create", "-f", "-", input=json.dumps(pv), check=True)
        added = users.add_user(spec, "alice", str(kube.admin_kubeconfig), tmp_path / "home", timeout_s=60)
        api = kconfig.new_client_from_config(config_file=str(kube.admin_kubeconfig))
        try:
            lab_settings.apply(api, spec, registry=REGISTRY, code_bucket=BUCKET, s3_endpoint=s3_url)
        finally:
            api.close()
        a = Alice(kube, spec, added.namespace, str(added.kubeconfig), s3_url)
        # kube-controller-manager publishes the root CA into a new namespace in its own time: counted before it
        # is there, it would look like an object lab made
        a.wait("kube-root-ca.crt published", lambda: a.get("configmap", "kube-root-ca.crt"))
        try:
            yield a
        finally:
            for name in a._nodes:
                kube.kubectl("delete", "node", name, "--wait=false")
            kube.kubectl("delete", "namespace", a.namespace, "--wait=false")
            for pv in pvs:
                kube.kubectl("delete", "pv", pv["metadata"]["name"], "--wait=false")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "resnet"
    root.mkdir()
    (root / "train.py").write_text("print('hello')\n")
    (root / "requirements.txt").write_text("torch\n")
    return root


@pytest.fixture
def lab_env(monkeypatch, tmp_path: Path, alice: Alice):
    """`lab` as alice with her kubeconfig (returned), nothing of the caller's AWS, lab settings or engine."""
    _lab_env(monkeypatch, tmp_path)
    return alice.kubeconfig


def _lab_env(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_ENGINE", "")  # no container engine: write the context, build nothing
    monkeypatch.setenv("LAB_USER", "alice")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for k in ("LAB_SETTINGS", "LAB_REGISTRY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))


def make_wheel(path: Path) -> None:
    """A one-module wheel (PEP 427), as a requirement the standard image does not have."""
    import zipfile

    files = {"tinydep/__init__.py": "VALUE = 42\n",
             "tinydep-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinydep\nVersion: 0.1\n",
             "tinydep-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}  # fmt: skip
    record = "".join(f"{name},," + "\n" for name in [*files, "tinydep-0.1.dist-info/RECORD"])
    with zipfile.ZipFile(path, "w") as z:
        for name, text in {**files, "tinydep-0.1.dist-info/RECORD": record}.items():
            z.writestr(name, text)


@pytest.fixture(scope="session")
def real_lab(tmp_path_factory):
    """The real local cluster `lab` is tested on end to end (tests/labctl/real_lab.py): one per test process."""
    from localcluster import binaries
    from tests.labctl import real_lab as real
    from tests.support import require_standard_venv, require_tool

    for name in (*binaries.CONTROL_PLANE, "kwok"):
        require_tool(name, str(binaries.BIN / name))
    require_standard_venv()
    with real.started(tmp_path_factory.mktemp("real-lab")) as lab:
        yield lab


@pytest.fixture
def lab_on_real(real_lab, monkeypatch, tmp_path):
    """`lab` as alice on the real local cluster for one test; her jobs removed after it."""
    real_lab.use(monkeypatch, tmp_path)
    try:
        yield real_lab
    finally:
        real_lab.clean()
