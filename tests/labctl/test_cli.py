"""`lab` end to end on the shared real control plane (the `kube` fixture: kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) as alice, with the kubeconfig `invoke add-user` gave her, and a moto S3 server, through the
official client: the settings read from the cluster, the code uploaded once by content, the objects the API server
admits and what the real controllers make of them. alice's namespace is this test's own (tests/labctl/conftest.py)."""

from __future__ import annotations

import boto3
import pytest
import yaml

from labctl.cli import main
from tests.labctl.conftest import BUCKET


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _submit(capsys, kubeconfig: str, project, *options: str, command=("true",)) -> tuple[int, str, str]:
    """``lab submit OPTIONS --path PROJECT -- COMMAND`` against the cluster."""
    return _run(
        capsys, "--kubeconfig", kubeconfig, "submit", *options, "--path", str(project), "--", *command
    )


def _keys(s3_url: str) -> list[str]:
    s3 = boto3.client("s3", endpoint_url=s3_url, region_name="us-west-2", aws_access_key_id="x",
                      aws_secret_access_key="x")  # fmt: skip
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents") or ())


def test_submit_creates_an_indexed_gang_job_the_api_server_accepts(
    alice, lab_env, project, capsys, s3_url
) -> None:
    before = alice.objects()  # add-user's own: the namespace's NetworkPolicies, the root CA
    assert before == {"jobs": 0, "pods": 0, "services": 0, "networkpolicies": 2, "configmaps": 1,
                      "podgroups.scheduling.x-k8s.io": 0}  # fmt: skip
    code, out, err = _submit(capsys, lab_env, project, "--gpus", "8", "--nodes", "2", "--name", "resnet",
                             command=("torchrun", "train.py"))  # fmt: skip
    assert (code, err) == (0, "")
    assert (
        f"submitted job resnet in {alice.namespace}: 2 nodes x 8 GPUs, gang" in out
    )  # a gang by default for 2 nodes
    assert "requirements.txt: the standard image has all 1 requirements; no image to build" in out
    assert "lab logs resnet -f" in out
    job = alice.get("job", "resnet")
    pods = alice.wait("the Job controller's 2 pods", lambda: len(got := alice.items("pods")) == 2 and got)
    pods = sorted(pods, key=lambda p: p["metadata"]["name"])
    svc = alice.get("service", "resnet")
    pg = alice.get("podgroups.scheduling.x-k8s.io", "resnet")
    netpol = alice.get("networkpolicy", "resnet-rendezvous")  # default-deny: its own pods
    spec = job["spec"]["template"]["spec"]
    assert (
        spec["containers"][0]["image"]
        == "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/standard:1-cuda12.9-py3.11"
    )
    assert spec["schedulerName"] == "research-gang-scheduler"
    code_url = next(e["value"] for e in spec["initContainers"][0]["env"] if e["name"] == "LAB_CODE_URL")
    assert code_url.startswith(f"s3://{BUCKET}/alice/.lab/code/") and code_url.split("/", 3)[3] in _keys(
        s3_url
    )
    assert [p["spec"]["hostname"] for p in pods] == ["resnet-0", "resnet-1"]
    assert all(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "resnet" for p in pods)
    assert all(p["status"]["phase"] == "Pending" and not p["spec"].get("nodeName") for p in pods)
    assert svc["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert netpol["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert pg["spec"]["minMember"] == 2
    assert spec["securityContext"]["runAsUser"] == 2001  # alice, named by her namespace

    code, out, _ = _run(capsys, "--kubeconfig", lab_env, "status")
    assert code == 0 and "resnet" in out and "Pending@-" in out

    code, out, _ = _run(capsys, "--kubeconfig", lab_env, "cancel", "resnet")
    assert code == 0 and out.startswith("cancelled resnet: deleted job")
    # the Job's pods and its NetworkPolicy go with it (the garbage collector, in its own time)
    alice.wait("nothing of the job left", lambda: alice.objects() == before)


def test_gang_pods_wait_for_the_gang_scheduler(alice, lab_env, project, capsys) -> None:
    """Gang pods name the gang scheduler: where it does not run (the shared control plane runs none), the real
    default scheduler leaves them Pending even with room for them, as a real cluster does, while the same job
    without --no-gang is bound and Running (kwok's nodes). 4 GPUs a pod: both jobs fit alice's GPU quota."""
    for _ in range(2):
        alice.node("dlr-us-west-2-gpu-v100x8", gpus=8)
    alice.claims_bound()
    _submit(
        capsys, lab_env, project, "--gpus", "4", "--nodes", "2", "--name", "g2", command=("torchrun", "t.py")
    )
    _submit(capsys, lab_env, project, "--gpus", "4", "--nodes", "2", "--no-gang", "--name", "s2",
            command=("torchrun", "t.py"))  # fmt: skip

    def phases() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p in alice.items("pods"):
            out.setdefault(p["metadata"]["name"].rsplit("-", 2)[0], []).append(p["status"]["phase"])
        return out

    alice.wait("s2 Running", lambda: phases().get("s2") == ["Running", "Running"])
    assert phases() == {"g2": ["Pending", "Pending"], "s2": ["Running", "Running"]}
    assert not any(p["spec"].get("nodeName") for p in alice.items("pods", "batch.kubernetes.io/job-name=g2"))


def test_same_code_is_uploaded_once_and_a_change_is_a_new_snapshot(
    alice, lab_env, project, capsys, s3_url
) -> None:
    (project / "train.py").write_text(f"print('hello')  # {id(capsys)}\n")  # a snapshot no test uploaded
    before = len(_keys(s3_url))
    outs = [_submit(capsys, lab_env, project, "--gpus", "1", "--name", n, command=("python", "train.py"))[1]
            for n in ("a1", "a2")]  # fmt: skip
    assert "uploaded " in outs[0] and "reusing s3://" in outs[1]
    assert len(_keys(s3_url)) == before + 1
    (project / "train.py").write_text("print('changed')\n")
    code, out, _ = _submit(
        capsys, lab_env, project, "--gpus", "1", "--name", "a3", command=("python", "train.py")
    )
    assert code == 0 and "uploaded " in out and len(_keys(s3_url)) == before + 2


def test_default_names_are_unique_per_submission(alice, lab_env, project, capsys) -> None:
    names = []
    for _ in range(2):
        code, out, _ = _submit(capsys, lab_env, project, "--gpus", "1", command=("python", "train.py"))
        assert code == 0
        names.append(next(ln.split()[2] for ln in out.splitlines() if ln.startswith("submitted job ")))
    assert names[0] != names[1] and all(n.startswith("resnet-") for n in names)


def test_dry_run_shows_what_the_server_admits_and_creates_nothing(
    alice, lab_env, project, capsys, s3_url
) -> None:
    before, keys = alice.objects(), _keys(s3_url)
    code, out, err = _submit(capsys, lab_env, project, "--gpus", "8", "--nodes", "2", "--name", "dry",
                             "--env", "LR=3e-4", "--dry-run", command=("torchrun", "train.py"))  # fmt: skip
    assert code == 0, err
    assert alice.objects() == before and _keys(s3_url) == keys  # nothing created, nothing uploaded
    assert "dry run: would upload s3://" in out or "dry run: would reuse s3://" in out
    assert f"dry run: the API server admitted these in {alice.namespace} as alice; nothing was created" in out
    docs = list(yaml.safe_load_all(out[out.index("apiVersion") :]))
    assert [d["kind"] for d in docs] == ["Job", "Service", "NetworkPolicy", "PodGroup"]
    assert {d["metadata"]["namespace"] for d in docs} == {alice.namespace}  # the namespace the real one uses
    pod = docs[0]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 2001
    assert {"name": "LR", "value": "3e-4"} in pod["containers"][0]["env"]
    # the same objects, created for real
    code, _, _ = _submit(capsys, lab_env, project, "--gpus", "8", "--nodes", "2", "--name", "dry",
                         "--env", "LR=3e-4", command=("torchrun", "train.py"))  # fmt: skip
    real = alice.get("job", "dry")["spec"]["template"]["spec"]
    assert real["containers"] == pod["containers"] and real["initContainers"] == pod["initContainers"]


@pytest.mark.parametrize(
    "args,reason",
    [
        (["--gpus", "16"], "lab: --gpus 16: no node type has more than 8 GPUs; ask for at most 8 per node and more --nodes"),
        (["--gpus", "1", "--region-pref", "mars-1"],
         "lab: --region-pref: unknown region 'mars-1'; the cluster has us-west-2, us-east-1, us-east-2, lab"),
        (["--gpus", "1", "--name", "My_Job"],
         "lab: --name 'My_Job': Kubernetes needs lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. resnet-lr3)"),
        (["--gpus", "A100:2", "--spot"], "lab: --spot: no spot nodes with A100 GPUs; drop --spot"),
        (["--gpus", "1", "--env", "NOEQUALS"], "lab: --env 'NOEQUALS': give KEY=VALUE, e.g. --env LR=3e-4"),
    ],
)  # fmt: skip
def test_bad_input_one_line_nothing_created(alice, lab_env, project, capsys, s3_url, args, reason) -> None:
    before, keys = alice.objects(), _keys(s3_url)
    code, out, err = _submit(capsys, lab_env, project, *args, command=("python", "train.py"))
    assert code == 2 and err == reason + "\n" and out == ""
    assert alice.objects() == before and _keys(s3_url) == keys


def test_the_api_servers_refusal_is_one_line_and_leaves_nothing(alice, lab_env, project, capsys) -> None:
    _submit(capsys, lab_env, project, "--gpus", "1", "--name", "dup")
    alice.wait("the Job controller's pod", lambda: len(alice.items("pods")) == 1)
    before = alice.objects()
    code, _, err = _submit(capsys, lab_env, project, "--gpus", "1", "--name", "dup")
    assert err == "lab: the cluster refused job 'dup': jobs.batch \"dup\" already exists\n" and code == 2
    assert alice.objects() == before


def test_jobs_are_admitted_where_pod_security_enforces_restricted(alice, lab_env, project, capsys) -> None:
    """add-user's namespace enforces Pod Security restricted (and the tenancy policy): the real Job controller's
    pods pass both admissions."""
    ns = alice.get("namespace", alice.namespace)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    code, _, err = _submit(capsys, lab_env, project, "--gpus", "8", "--nodes", "2", "--name", "psa",
                           command=("torchrun", "train.py"))  # fmt: skip
    assert code == 0, err
    alice.wait("the Job controller's pods passed admission", lambda: len(alice.items("pods")) == 2)
    assert not [e for e in alice.items("events") if e["reason"] == "FailedCreate"]


def test_settings_missing_from_the_cluster_is_one_line(alice, lab_env, project, capsys) -> None:
    alice.kube.kubectl("-n", "kube-public", "delete", "configmap", "research-lab-settings", check=True)
    code, out, err = _submit(capsys, lab_env, project, "--gpus", "1")
    assert code == 2 and err.startswith("lab: the cluster publishes no lab settings (ConfigMap kube-public/")
    assert err.count("\n") == 1
    assert (
        alice.objects()["jobs"] == 0
    )  # the next test's alice publishes them again (under the same singleton)


def test_tensorboard_prints_the_pod_address(alice, lab_env, project, capsys) -> None:
    alice.node("dlr-us-west-2-cpu")  # a CPU node for the TensorBoard pod: kwok gives it an address
    alice.claims_bound()
    _submit(capsys, lab_env, project, "--gpus", "1", "--name", "tb")
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "tensorboard", "tb", "--timeout", "60")
    assert code == 0, err
    pod = alice.get("pod", "tb-tb")
    assert out.startswith(f"TensorBoard for tb: http://{pod['status']['podIP']}:6006/")
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "results", "readOnly": True}
    assert "--logdir=/results/tb" in pod["spec"]["containers"][0]["command"]
    assert pod["spec"]["securityContext"]["runAsUser"] == 2001


def test_ssh_config_is_an_include_that_never_clobbers(alice, tmp_path, capsys, monkeypatch) -> None:
    """The user is the kubeconfig's identity (alice's client certificate, as the API server answers who she is),
    the machines the cluster's settings."""
    monkeypatch.delenv("LAB_USER", raising=False)
    kubeconfig = alice.kubeconfig
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "config").write_text("Host mine\n  HostName example.org\n")
    for _ in range(2):
        code, out, err = _run(capsys, "--kubeconfig", str(kubeconfig), "ssh-config", "--ssh-dir", str(ssh))
        assert code == 0, err
    assert "for alice" in out
    text = (ssh / "config").read_text()
    assert text.count("Include lab_config") == 1 and text.endswith("Host mine\n  HostName example.org\n")
    inc = (ssh / "lab_config").read_text()
    assert "Host dlr-gpu-1\n  HostName gpu-1.ssh.research.internal\n  User alice" in inc
    assert inc.count("Host ") == 4


def test_gang_without_the_podgroup_kind_rolls_back(alice, lab_env, project, capsys, monkeypatch) -> None:
    """A cluster without the PodGroup kind: the real API server's 404 for a version of scheduling.x-k8s.io it does
    not serve (the CRD stays installed for the other tests of the shared control plane)."""
    from labctl import kube

    monkeypatch.setattr(kube, "_VERSION", "v1alpha0")
    before = alice.objects()
    code, _, err = _submit(capsys, lab_env, project, "--gpus", "8", "--nodes", "2", "--name", "g")
    assert code == 2
    assert err == (
        "lab: the cluster refused part of job 'g' (nothing is left): the cluster has no PodGroup kind "
        "(scheduler-plugins' coscheduling is not installed); submit with --no-gang\n"
    )
    alice.wait("nothing of the job left", lambda: alice.objects() == before)


def test_ssh_config_says_how_to_start_a_machine_that_stopped_while_idle(alice, tmp_path, capsys) -> None:
    """Issue 29: the SSH machines stop when idle (operations.ssh_idle_stop_min, published in the cluster's
    settings); the entries and the command's output say how to start one again."""
    kubeconfig = alice.kubeconfig
    code, out, err = _run(
        capsys, "--kubeconfig", str(kubeconfig), "ssh-config", "--ssh-dir", str(tmp_path / "ssh")
    )
    assert code == 0, err
    assert "invoke ssh-start <group>-<n>" in out and "60 minutes" in out
    inc = (tmp_path / "ssh" / "lab_config").read_text()
    assert "# stopped? invoke ssh-start gpu-1\nHost dlr-gpu-1\n" in inc


def test_a_first_dry_run_needs_no_aws_identity(
    alice, lab_env, project, capsys, tmp_path, monkeypatch
) -> None:
    """A researcher with only the kubeconfig add-user gave them: the bucket is not reachable with no AWS credentials
    (the cluster's real bucket, no local endpoint), and the dry run says so in its line and goes on."""
    from tests.labctl.settings import SETTINGS_TEXT

    settings = tmp_path / "settings.yaml"
    settings.write_text(SETTINGS_TEXT)  # the real bucket: no s3_endpoint
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to find either
    monkeypatch.delenv("LAB_S3_ENDPOINT", raising=False)
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "--settings", str(settings), "submit", "--gpus", "1",
                          "--name", "first", "--dry-run", "--path", str(project), "--", "python", "train.py")  # fmt: skip
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("dry run: would upload"))
    assert "not checked (s3://dlr-results-123456789012: Unable to locate credentials" in line
    assert f"dry run: the API server admitted these in {alice.namespace} as alice; nothing was created" in out


@pytest.mark.parametrize(
    ("text", "want"),
    [("apiVersion: v1\nclusters: {bad\n", "not YAML (expected ',' or '}', but got '<stream end>' at line 3, column 1)"),
     ("just a string\n", "not a kubeconfig ('str' object does not support item assignment): it needs clusters")],
)  # fmt: skip
def test_a_malformed_kubeconfig_is_one_line(tmp_path, capsys, text: str, want: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    code, _, err = _run(capsys, "--kubeconfig", str(path), "status")
    assert code == 2 and err.startswith(f"lab: kubeconfig {path}: {want}") and err.count("\n") == 1


def test_an_unreachable_cluster_is_one_line(tmp_path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "current-context": "x", "users": [{"name": "u", "user": {"token": "t"}}],
        "clusters": [{"name": "x", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "u"}}]}))  # fmt: skip
    for argv in (["status"], ["logs", "j"], ["cancel", "j"]):
        code, _, err = _run(capsys, "--kubeconfig", str(path), *argv)
        assert code == 2 and err.count("\n") == 1, err
        assert (
            err.startswith("lab: the cluster does not answer (NewConnectionError:")
            and "Connection refused" in err
        )


def test_a_job_file_has_the_flags_fields(alice, lab_env, project, capsys, tmp_path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("name: from-file\ngpus: 1\nnodes: 2\nno-gang: true\nenv: {LR: 3e-4}\nkeep: [out]\n"
                   "command: torchrun train.py --lr $(LR)\n")  # fmt: skip
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "submit", "-f", str(job), "--path", str(project),
                          "--dry-run")  # fmt: skip
    assert code == 2 and err == (f"lab: {job}: no-gang: not a field of lab submit; the fields are gpus, gpu-type, "
                                 "spot, nodes, gang, region-pref, name, path, env, retries, max-file-mb, keep, "
                                 "no-build, command\n")  # fmt: skip
    job.write_text(job.read_text().replace("no-gang: true", "gang: false"))
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "submit", "-f", str(job), "--path", str(project),
                          "--name", "flag-wins", "--dry-run")  # fmt: skip
    assert code == 0, err
    docs = list(yaml.safe_load_all(out[out.index("apiVersion") :]))
    assert docs[0]["metadata"]["name"] == "flag-wins" and docs[0]["spec"]["completions"] == 2
    main = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert main["command"][3:] == ["torchrun", "train.py", "--lr", "$(LR)"]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["LR"] == "3e-4" and env["LAB_KEEP"] == "out"
    assert (
        docs[0]["spec"]["template"]["spec"].get("schedulerName") != "research-gang-scheduler"
    )  # gang: false
    job.write_text("gpus: eight\n")
    code, _, err = _run(capsys, "--kubeconfig", lab_env, "submit", "-f", str(job), "--path", str(project))
    assert (
        code == 2
        and err == f"lab: {job}: gpus: 'eight' is not a number of GPUs per node or TYPE:N (A100:8)\n"
    )
