"""An emulator over the spec's node groups with the cluster's lab settings published (as `invoke up` publishes
them), a moto S3 server on loopback as the cluster's bucket, and a kubeconfig for alice's namespace."""

from __future__ import annotations

import contextlib
from pathlib import Path

import boto3
import pytest
import yaml
from kubernetes import config

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.spec_groups import groups_from_spec
from clusterspec.loader import DEFAULT_SPEC, load_spec
from provision import lab_settings
from tests.support import load_yaml

SPEC_DATA = load_yaml(Path(DEFAULT_SPEC))
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


def publish_settings(emu, s3_url: str, path: Path) -> None:
    admin = emu.write_kubeconfig(path)
    api = config.new_client_from_config(config_file=str(admin))
    try:
        lab_settings.apply(api, load_spec(), registry="123456789012.dkr.ecr.us-west-2.amazonaws.com",
                           code_bucket=BUCKET, s3_endpoint=s3_url)  # fmt: skip
    finally:
        api.close()


@pytest.fixture
def emu(s3_url, tmp_path: Path):
    make_bucket(s3_url)
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups_from_spec(SPEC_DATA))
    with Emulator(model) as e:
        e.install_podgroup_crd()  # `invoke deploy-scheduler` applies it on a real cluster
        publish_settings(e, s3_url, tmp_path / "admin.kubeconfig")  # `invoke up` publishes them
        yield e


@pytest.fixture
def kubeconfig(emu, tmp_path: Path) -> str:
    emu.create_namespace("u-alice")  # `invoke add-user alice` creates it
    path = emu.write_kubeconfig(tmp_path / "kubeconfig")
    data = load_yaml(path)
    for ctx in data["contexts"]:
        ctx["context"]["namespace"] = "u-alice"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "resnet"
    root.mkdir()
    (root / "train.py").write_text("print('hello')\n")
    (root / "requirements.txt").write_text("torch\n")
    return root


@pytest.fixture
def lab_env(monkeypatch, tmp_path: Path, kubeconfig: str):
    monkeypatch.setenv("LAB_ENGINE", "")  # no container engine: write the context, build nothing
    monkeypatch.setenv("LAB_USER", "alice")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for k in ("LAB_SETTINGS", "LAB_REGISTRY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    return kubeconfig


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
