"""Researchers as tenants (issues 26 and 36), on the real kube-apiserver of the local control plane (the `kube`
fixture): a researcher's own kubeconfig (from `invoke add-user`, through the CSR API and kube-controller-manager's
signer) is refused what would let a pod escape its namespace or its owner's uid, each with the API server's
message as kubectl prints it; what `lab submit` creates is admitted. Cases in data/tenant_escapes.yaml.

The tenancy objects are the cluster's singletons (`invoke deploy-tenancy` applies them, as the day-one test does):
applied here under their own names, identical wherever they are applied. Each test's researchers live in namespaces
of their own (a per-test namespace prefix)."""

from __future__ import annotations

import copy
import json
import time

import pytest
import yaml

from clusterspec.loader import load_spec
from labctl import jobs as lab_jobs
from provision import lab_settings, tenancy, users
from tests.support import ROOT, load_yaml

pytestmark = pytest.mark.tool
SPEC = load_spec()
CASES = load_yaml(ROOT / "tests/provision/data/tenant_escapes.yaml")
UID = {u.name: u.uid for u in SPEC.users}


def _spec(prefix: str):
    return SPEC.model_copy(
        update={"researchers": SPEC.researchers.model_copy(update={"namespace_prefix": prefix})}
    )


def _wait_for_policies(kube, ns: str) -> None:
    """A new ValidatingAdmissionPolicy takes effect once kube-apiserver's informer has it: wait for a pod it refuses
    to be refused (server-side dry run, nothing created)."""
    pod = lab_like_pod("probe", UID["alice"], {"nodeName": "x"})
    pod["metadata"]["namespace"] = ns
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = kube.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(pod))
        if tenancy.POLICY_NAME in done.stderr:
            return
        time.sleep(0.5)
    raise AssertionError(f"the tenant policies do not take effect: {done.stderr}")


@pytest.fixture(scope="module")
def tenants(kube, tmp_path_factory):
    """The tenancy objects applied by the admin; alice and bob added by `invoke add-user` under a prefix of this
    module's own; (spec, {user: kubectl with their kubeconfig}, home)."""
    tmp = tmp_path_factory.mktemp("tenancy")
    spec = _spec(kube.unique("u") + "-")
    path = tenancy.write(spec, tmp / "tenancy.yaml")
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=research-cluster-tenancy",
                 "-f", str(path), check=True)  # fmt: skip
    home = tmp / "home"
    runners = {}
    for user in ("alice", "bob"):
        # held here: a module's fixture is set up before the function-scoped guard of tests/provision/conftest.py
        with kube.singleton("lab-settings"):
            added = users.add_user(spec, user, str(kube.admin_kubeconfig), home, timeout_s=60)

        def run(*args, input=None, _kc=added.kubeconfig):
            return kube.kubectl(*args, input=input, kubeconfig=_kc)

        runners[user] = run
    _wait_for_policies(kube, spec.researchers.namespace("alice"))
    return spec, runners, home


def _merge(base: dict, patch: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def lab_like_pod(name: str, uid: int, patch: dict | None = None) -> dict:
    """A pod as lab's are (labctl/jobs.py): restricted, the owner's uid and group; ``patch`` deep-merged into its spec,
    its key "container" into its one container."""
    container = {"name": "main", "image": "python:3.11", "command": ["sleep", "1"],
                 "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}  # fmt: skip
    spec = {"containers": [container], "enableServiceLinks": False,
            "securityContext": {"runAsUser": uid, "runAsGroup": uid, "runAsNonRoot": True,
                                "supplementalGroupsPolicy": "Strict", "seccompProfile": {"type": "RuntimeDefault"}}}  # fmt: skip
    patch = dict(patch or {})
    if "container" in patch:
        spec["containers"][0] = _merge(container, patch.pop("container"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": _merge(spec, patch)}


def _fill(text: str, spec) -> str:
    return (text.replace("{ns}", spec.researchers.namespace("alice")).replace("{bob_ns}", spec.researchers.namespace("bob"))
            .replace("{uid}", str(UID["alice"])).replace("{bob_uid}", str(UID["bob"])))  # fmt: skip


def _case_object(case: dict, spec) -> dict:
    if "object" in case:
        return yaml.safe_load(_fill(case["object"], spec))
    return lab_like_pod(case["name"], UID["alice"], yaml.safe_load(_fill(case["pod"], spec)))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_researcher_is_refused_each_escape_with_the_api_servers_message(tenants, case):
    spec, run, _ = tenants
    obj = _case_object(case, spec)
    out = run["alice"]("create", "-f", "-", input=yaml.safe_dump(obj))
    assert out.returncode == 1, out.stdout
    last = out.stderr.strip().splitlines()[-1]  # after any "Warning: ..." line
    want = _fill(case["message"], spec)
    assert last == f'Error from server ({case["reason"]}): error when creating "STDIN": {want}'
    kind = obj["kind"].lower() + "s"
    assert run["alice"]("get", kind, obj["metadata"]["name"]).returncode == 1  # nothing was created


def test_the_same_pod_passes_with_the_owners_uid(tenants):
    """The refusals are about the uid, not the pod: alice's own uid is admitted; bob's pod with bob's uid in his
    own namespace too (server-side dry run)."""
    spec, run, _ = tenants
    ok = run["alice"](
        "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(lab_like_pod("own", UID["alice"]))
    )
    assert ok.returncode == 0, ok.stderr
    assert "Warning" not in ok.stderr  # restricted, and nothing to warn about
    bob = run["bob"](
        "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(lab_like_pod("own", UID["bob"]))
    )
    assert bob.returncode == 0, bob.stderr


def test_the_researchers_own_job_is_admitted_and_its_pods_created(tenants, kube):
    """What `lab submit --gpus 8 --nodes 2` creates (the Job, its headless Service, its rendezvous NetworkPolicy) is
    admitted with alice's own credentials, and the Job controller's pods pass the tenant policy (they are created)."""
    spec, run, _ = tenants
    from tests.labctl.settings import SETTINGS

    ns = spec.researchers.namespace("alice")
    settings = SETTINGS
    req = lab_jobs.JobRequest(name="resnet", namespace=ns, image=SETTINGS.standard_image,
                              command=["torchrun", "train.py"], gpus=8, nodes=2, gang=False, user="alice",
                              code_url="s3://dlr-results-123456789012/alice/.lab/code/x.tar.gz",
                              code_sha256="ab" * 32, code_tag="ab" * 8)  # fmt: skip
    assert settings.uid("alice") == UID["alice"]
    docs = lab_jobs.manifests(req, settings)
    assert [d["kind"] for d in docs] == ["Job", "Service", "NetworkPolicy"]
    out = run["alice"]("create", "-f", "-", input=yaml.safe_dump_all(docs))
    assert out.returncode == 0, out.stderr
    assert "Warning" not in out.stderr, out.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = json.loads(kube.kubectl("-n", ns, "get", "pods", "-l", "batch.kubernetes.io/job-name=resnet",
                                       "-o", "json", check=True).stdout)["items"]  # fmt: skip
        if len(pods) == 2:
            break
        time.sleep(0.5)
    events = kube.kubectl("-n", ns, "get", "events", "-o", "custom-columns=M:.message").stdout
    assert len(pods) == 2, events
    quota = json.loads(kube.kubectl("-n", ns, "get", "resourcequota", "researcher", "-o", "json").stdout)
    assert quota["spec"]["hard"]["requests.cpu"] == str(SPEC.researchers.quota.cpus)
    kube.kubectl("-n", ns, "delete", "job", "resnet", "--wait=false")


def test_add_user_makes_the_tenant_objects_and_the_researcher_cannot_loosen_them(tenants, kube):
    spec, run, _ = tenants
    ns = spec.researchers.namespace("alice")
    labels = json.loads(kube.kubectl("get", "namespace", ns, "-o", "json", check=True).stdout)["metadata"][
        "labels"
    ]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels[tenancy.UID_LABEL] == str(UID["alice"])
    out = run["alice"]("label", "namespace", ns, f"{tenancy.UID_LABEL}={UID['bob']}", "--overwrite")
    assert out.returncode == 1
    assert f'namespaces "{ns}" is forbidden: User "alice" cannot patch resource "namespaces"' in out.stderr
    out = run["alice"]("delete", "resourcequota", "researcher")
    assert out.returncode == 1 and "forbidden" in out.stderr


def test_logs_are_read_in_ones_own_namespace_only(tenants):
    """Issue 36: the cluster-wide role is research-viewer (jobs, pods, nodes), not the built-in view, which reads
    every namespace's pods/log; alice reads her own pods' logs through edit."""
    spec, run, _ = tenants
    bob_ns = spec.researchers.namespace("bob")
    own = run["alice"]("auth", "can-i", "get", "pods", "--subresource=log")
    assert own.stdout.strip() == "yes"
    other = run["alice"]("auth", "can-i", "get", "pods", "--subresource=log", "-n", bob_ns)
    assert other.stdout.strip() == "no"
    out = run["alice"]("get", "--raw", f"/api/v1/namespaces/{bob_ns}/pods/train-0/log")
    assert out.returncode == 1
    assert (f'Error from server (Forbidden): pods "train-0" is forbidden: User "alice" cannot get resource "pods/log" '
            f'in API group "" in the namespace "{bob_ns}"') in out.stderr  # fmt: skip
    assert run["alice"]("get", "pods", "-n", bob_ns).returncode == 0  # still sees what runs there


def test_a_removed_researcher_no_longer_reads_the_lab_settings(kube, tmp_path):
    """Issue 36: the settings' readers are the spec's users by name, not the group research:users that every
    certificate `add-user` issued still carries after `remove-user` (a client certificate cannot be revoked)."""
    name = kube.unique("c").replace("-", "")
    from clusterspec.spec import User

    spec = _spec(kube.unique("u") + "-")
    spec = spec.model_copy(update={"users": [*spec.users, User(name=name, uid=4321, ssh_keys=[])]})
    read = ("-n", "kube-public", "get", "configmap", "research-lab-settings")
    with kube.singleton("lab-settings"):  # another test's add_user rewrites the readers from its own spec
        added = users.add_user(spec, name, str(kube.admin_kubeconfig), tmp_path / "home", timeout_s=60)
        assert kube.kubectl(*read, kubeconfig=added.kubeconfig).returncode == 0
        users.remove_user(spec, name, str(kube.admin_kubeconfig), tmp_path / "home")
        out = kube.kubectl(*read, kubeconfig=added.kubeconfig)
    assert out.returncode == 1
    assert (f'configmaps "research-lab-settings" is forbidden: User "{name}" cannot get resource "configmaps" in '
            'API group "" in the namespace "kube-public"') in out.stderr  # fmt: skip
    binding = lab_settings.objects(spec)[2]
    assert all(s["kind"] == "User" for s in binding["subjects"])


def test_secrets_are_encrypted_in_etcd_and_audited_without_their_data(kube):
    """Issue 36: the local control plane runs production's ClusterConfiguration (localcluster/kubeadm.py), so
    kube-apiserver reads the bootstrap's EncryptionConfiguration and audit policy: a Secret is stored in etcd
    under secretbox (read back raw through etcd's own API), and its creation is in the audit log at Metadata,
    its data nowhere in it."""
    import base64
    import ssl
    import urllib.request

    ns = kube.namespace("enc")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns},
              "stringData": {"token": "not-a-real-secret-1234"}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(secret), check=True)
    state = json.loads((kube.workdir / "stack.json").read_text())
    pki = kube.workdir / "pki"
    ctx = ssl.create_default_context(cafile=str(pki / "etcd" / "ca.crt"))
    ctx.load_cert_chain(str(pki / "apiserver-etcd-client.crt"), str(pki / "apiserver-etcd-client.key"))
    key = base64.b64encode(f"/registry/secrets/{ns}/s".encode()).decode()
    request = urllib.request.Request(f"https://127.0.0.1:{state['ports']['etcd_client']}/v3/kv/range",
                                     data=json.dumps({"key": key}).encode(), method="POST")  # fmt: skip
    with urllib.request.urlopen(request, context=ctx, timeout=10) as r:
        value = base64.b64decode(json.loads(r.read())["kvs"][0]["value"])
    assert value.startswith(b"k8s:enc:secretbox:v1:key1:")
    assert b"not-a-real-secret-1234" not in value
    log = kube.workdir / "var/log/kubernetes/audit/audit.log"
    deadline = time.monotonic() + 10
    events = []
    while time.monotonic() < deadline and not events:
        events = [e for e in map(json.loads, log.read_text().splitlines())
                  if (e.get("objectRef") or {}).get("resource") == "secrets"
                  and (e.get("objectRef") or {}).get("namespace") == ns and e["verb"] == "create"]  # fmt: skip
        time.sleep(0.2)
    assert events and all(e["level"] == "Metadata" for e in events)
    assert "not-a-real-secret-1234" not in log.read_text()


def test_a_claim_without_a_volume_name_never_binds_another_researchers_volume(tenants, kube):
    """Issue 36: the lab's NFS volumes had no claimRef, so any namespace's matching claim could bind one. Bob's lab
    volume (storage.lab_volumes) is reserved for bob's claim: kube-controller-manager's binder leaves alice's
    matching claim Pending, while bob's own claim (add-user made it) binds."""
    from provision import storage

    spec, run, _ = tenants
    bob_ns = spec.researchers.namespace("bob")
    pv = next(
        v
        for v in storage.lab_volumes(spec)
        if v["spec"]["claimRef"] == {"namespace": bob_ns, "name": "lab-home"}
    )
    kube.kubectl("create", "-f", "-", input=json.dumps(pv), check=True)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "grab"},
             "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                      "resources": {"requests": {"storage": storage.SIZE}}}}  # fmt: skip
    assert run["alice"]("create", "-f", "-", input=json.dumps(claim)).returncode == 0
    ns = spec.researchers.namespace("alice")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        bob = json.loads(
            kube.kubectl("-n", bob_ns, "get", "pvc", "lab-home", "-o", "json", check=True).stdout
        )
        if bob["status"].get("phase") == "Bound":
            break
        time.sleep(1)
    assert bob["status"]["phase"] == "Bound" and bob["spec"]["volumeName"] == pv["metadata"]["name"]
    grab = json.loads(kube.kubectl("-n", ns, "get", "pvc", "grab", "-o", "json", check=True).stdout)
    assert grab["status"]["phase"] == "Pending" and not grab["spec"].get("volumeName")
    kube.kubectl("delete", "pv", pv["metadata"]["name"], "--wait=false")
