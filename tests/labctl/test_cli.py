"""`lab` end to end against the local Kubernetes API emulator, through the official client."""

from __future__ import annotations

import pytest

from labctl.cli import main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _submit(capsys, kubeconfig: str, project, *options: str, command=("true",)) -> tuple[int, str, str]:
    """``lab submit --no-build OPTIONS --path PROJECT -- COMMAND`` against the emulator."""
    return _run(capsys, "--kubeconfig", kubeconfig, "submit", "--no-build", *options, "--path", str(project), "--",
                *command)  # fmt: skip


def _objects(emu) -> dict[str, int]:
    """What researchers' commands made: objects in alice's namespace."""
    store = emu.model.store
    with emu.model.lock:
        return {
            k: sum(o["metadata"].get("namespace") == "u-alice" for o in store.list(k))
            for k in ("jobs", "pods", "services", "podgroups.scheduling.x-k8s.io")
        }


def test_submit_creates_an_indexed_gang_job_the_emulator_accepts(emu, lab_env, project, capsys) -> None:
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2", "--gang",
                          "--name", "resnet", "--path", str(project), "--", "torchrun", "train.py")  # fmt: skip
    assert (code, err) == (0, "")
    assert "submitted job resnet in u-alice: 2 nodes x 8 GPUs, gang" in out
    assert "lab logs resnet -f" in out
    with emu.model.lock:
        job = emu.model.store.get("jobs", "u-alice", "resnet")
        pods = sorted(emu.model.store.list("pods", "u-alice"), key=lambda p: p["metadata"]["name"])
        svc = emu.model.store.get("services", "u-alice", "resnet")
        pg = emu.model.store.get("podgroups.scheduling.x-k8s.io", "u-alice", "resnet")
    image = job["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/research:")
    assert [p["spec"]["hostname"] for p in pods] == ["resnet-0", "resnet-1"]
    assert [p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods] == [
        "0",
        "1",
    ]
    assert all(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "resnet" for p in pods)
    assert svc["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert pg["spec"]["minMember"] == 2
    assert pods[0]["spec"]["securityContext"]["runAsUser"] == 2001  # alice, named by her namespace

    code, out, _ = _run(capsys, "--kubeconfig", lab_env, "status")
    assert code == 0 and "resnet" in out and "Pending@-" in out

    code, out, _ = _run(capsys, "--kubeconfig", lab_env, "cancel", "resnet")
    # the garbage collector takes the Service and PodGroup (owned by the Job) with it at once here
    assert code == 0 and out.startswith("cancelled resnet: deleted job")
    assert _objects(emu) == {"jobs": 0, "pods": 0, "services": 0, "podgroups.scheduling.x-k8s.io": 0}


def test_same_code_same_image_tag(emu, lab_env, project, capsys) -> None:
    images = []
    for name in ("a1", "a2"):
        _submit(
            capsys,
            lab_env,
            project,
            "--gpus",
            "1",
            "--name",
            name,
            command=("python", "train.py"),
        )
        with emu.model.lock:
            images.append(
                emu.model.store.get("jobs", "u-alice", name)["spec"]["template"]["spec"]["containers"][0][
                    "image"
                ]
            )
    assert images[0] == images[1]
    (project / "train.py").write_text("print('changed')\n")
    _submit(
        capsys,
        lab_env,
        project,
        "--gpus",
        "1",
        "--name",
        "a3",
        command=("python", "train.py"),
    )
    with emu.model.lock:
        assert (
            emu.model.store.get("jobs", "u-alice", "a3")["spec"]["template"]["spec"]["containers"][0]["image"]
            != images[0]
        )


@pytest.mark.parametrize(
    "args,reason",
    [
        (
            ["--gpus", "16"],
            "lab: --gpus 16: no node type has more than 8 GPUs; ask for at most 8 per node and more --nodes",
        ),
        (
            ["--gpus", "1", "--region-pref", "mars-1"],
            "lab: --region-pref: unknown region 'mars-1'; the cluster has us-west-2, us-east-1, us-east-2, lab",
        ),
        (
            ["--gpus", "1", "--name", "My_Job"],
            "lab: --name 'My_Job': Kubernetes needs lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. resnet-lr3)",
        ),
    ],
)
def test_bad_input_one_line_nothing_created(emu, lab_env, project, capsys, args, reason) -> None:
    before = _objects(emu)
    code, out, err = _submit(
        capsys,
        lab_env,
        project,
        *args,
        command=("python", "train.py"),
    )
    assert code == 2 and err == reason + "\n" and out == ""
    assert _objects(emu) == before


def test_the_api_servers_refusal_is_one_line_and_leaves_nothing(emu, lab_env, project, capsys) -> None:
    _submit(capsys, lab_env, project, "--gpus", "1", "--name", "dup")
    before = _objects(emu)
    code, _, err = _submit(capsys, lab_env, project, "--gpus", "1", "--name", "dup")
    assert code == 2 and err.startswith("lab: the cluster refused job 'dup': ") and err.count("\n") == 1
    assert _objects(emu) == before


def test_no_engine_writes_the_context_and_says_how_to_build(lab_env, project, capsys, tmp_path) -> None:
    code, out, _ = _run(capsys, "image", "build", str(project))
    assert code == 0
    assert "no working docker or buildah here; the context is " in out
    tar = next((tmp_path / "cache" / "lab" / "contexts").glob("*.tar"))
    assert (
        f"docker build -f .lab/Dockerfile -t 123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/research:{tar.stem} - < {tar}"
        in out
    )
    code, _, err = _run(capsys, "image", "build", str(project), "--push")
    assert code == 2 and "rerun with --no-build" in err


def test_tensorboard_prints_the_pod_address(emu, lab_env, project, capsys) -> None:
    _submit(capsys, lab_env, project, "--gpus", "1", "--name", "tb")
    with emu.model.lock:
        emu.model.advance(60)  # the CPU node is there from the start: the TensorBoard pod binds at once
    code, out, err = _run(capsys, "--kubeconfig", lab_env, "tensorboard", "tb", "--timeout", "5")
    assert code == 0, err
    with emu.model.lock:
        pod = emu.model.store.get("pods", "u-alice", "tb-tb")
    assert out.startswith(f"TensorBoard for tb: http://{pod['status']['podIP']}:6006/")
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "results", "readOnly": True}
    assert "--logdir=/results/tb" in pod["spec"]["containers"][0]["command"]


def test_ssh_config_is_an_include_that_never_clobbers(tmp_path, lab_env, capsys) -> None:
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "config").write_text("Host mine\n  HostName example.org\n")
    for _ in range(2):
        code, out, _ = _run(capsys, "ssh-config", "--ssh-dir", str(ssh))
        assert code == 0
    text = (ssh / "config").read_text()
    assert text.count("Include lab_config") == 1 and text.endswith("Host mine\n  HostName example.org\n")
    inc = (ssh / "lab_config").read_text()
    assert "Host dlr-gpu-1\n  HostName gpu-1.ssh.research.internal\n  User alice" in inc
    assert inc.count("Host ") == 4


def test_gang_without_the_podgroup_kind_rolls_back(emu, lab_env, project, capsys) -> None:
    inner = emu.api.handle

    def no_podgroups(method, path, query, content_type, body):
        if "/apis/scheduling.x-k8s.io/" in path:
            from autoscaler.emulator.api import Reply, status_body

            return Reply(
                404, status_body(404, "NotFound", "the server could not find the requested resource")
            )
        return inner(method, path, query, content_type, body)

    emu.api.handle = no_podgroups
    code, _, err = _run(capsys, "--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2",
                        "--gang", "--name", "g", "--path", str(project), "--", "true")  # fmt: skip
    assert code == 2
    assert err == (
        "lab: the cluster refused part of job 'g' (nothing is left): the cluster has no PodGroup kind "
        "(scheduler-plugins' coscheduling is not installed); submit without --gang\n"
    )
    assert _objects(emu) == {"jobs": 0, "pods": 0, "services": 0, "podgroups.scheduling.x-k8s.io": 0}


def test_ssh_config_says_how_to_start_a_machine_that_stopped_while_idle(tmp_path, lab_env, capsys) -> None:
    """Issue 29: the SSH machines stop when idle (operations.ssh_idle_stop_min); the entries and the command's
    output say how to start one again."""
    code, out, _ = _run(capsys, "ssh-config", "--ssh-dir", str(tmp_path / "ssh"))
    assert code == 0 and "invoke ssh-start <group>-<n>" in out and "60 minutes" in out
    inc = (tmp_path / "ssh" / "lab_config").read_text()
    assert "# stopped? invoke ssh-start gpu-1\nHost dlr-gpu-1\n" in inc
