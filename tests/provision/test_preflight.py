"""`invoke preflight` against moto (and botocore Stubbers for Service Quotas, whose values moto does not keep): a
fresh account reports each missing quota or resource in one line; a prepared account passes."""

from __future__ import annotations

import datetime as dt

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto import mock_aws

from clusterspec.loader import load_spec
from provision import preflight, vpn_ca
from provision.terraform.commands import selected_roots
from tests.support import ROOT

ACCOUNT = "123456789012"
CODES = sorted(set(preflight.ON_DEMAND.values()) | set(preflight.SPOT.values()))


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture
def aws(monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield


def _clients(quota_values: dict[str, dict[str, float]]):
    """moto's clients, and Stubbed clients where moto has no values: Service Quotas (QUOTA_VALUES[region]) and
    Lambda's account settings (a new account's 10 concurrent executions)."""
    made: dict = {}

    def clients(service: str, region: str):
        if (service, region) in made:
            return made[(service, region)]
        client = boto3.client(service, region_name=region)
        if service == "service-quotas":
            stub = Stubber(client)
            defaults = [{"QuotaCode": c, "Value": 5.0, "ServiceCode": "ec2"} for c in CODES]
            applied = [
                {"QuotaCode": c, "Value": v, "ServiceCode": "ec2"} for c, v in quota_values[region].items()
            ]
            stub.add_response("list_aws_default_service_quotas", {"Quotas": defaults}, {"ServiceCode": "ec2"})
            stub.add_response("list_service_quotas", {"Quotas": applied}, {"ServiceCode": "ec2"})
            stub.activate()
        if service == "lambda":  # moto has no GetAccountSettings
            stub = Stubber(client)
            stub.add_response(
                "get_account_settings",
                {"AccountLimit": {"ConcurrentExecutions": 10, "UnreservedConcurrentExecutions": 10}},
            )
            stub.activate()
        made[(service, region)] = client
        return client

    return clients


def _certificate(key) -> tuple[bytes, bytes]:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vpn.research.internal")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=365)).sign(key, hashes.SHA256()))  # fmt: skip
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem


def _import(key) -> str:
    cert, pem = _certificate(key)
    return boto3.client("acm", region_name="us-west-2").import_certificate(Certificate=cert, PrivateKey=pem)[
        "CertificateArn"
    ]


def _delete_default_vpc(region: str) -> None:
    ec2 = boto3.client("ec2", region_name=region)
    for vpc in ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]:
        for sn in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]:
            ec2.delete_subnet(SubnetId=sn["SubnetId"])
        for igw in ec2.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}]
        )["InternetGateways"]:
            ec2.detach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=vpc["VpcId"])
            ec2.delete_internet_gateway(InternetGatewayId=igw["InternetGatewayId"])
        ec2.delete_vpc(VpcId=vpc["VpcId"])


def test_a_fresh_account_gets_one_line_per_problem(aws, spec, tmp_path, capsys, monkeypatch):
    from provision import images

    monkeypatch.delenv(images.BY_TAG_ENV, raising=False)  # tests/conftest.py sets it for the local stack
    boto3.client("s3control", region_name="us-west-2").put_public_access_block(
        AccountId=ACCOUNT,
        PublicAccessBlockConfiguration={"BlockPublicAcls": True, "IgnorePublicAcls": True,
                                        "BlockPublicPolicy": True, "RestrictPublicBuckets": True},
    )  # fmt: skip
    _delete_default_vpc("us-west-2")
    ecdsa = _import(ec.generate_private_key(ec.SECP256R1()))
    low = {
        r: {"L-1216C47A": 32.0, "L-DB2E81BA": 0.0, "L-417A185B": 0.0, "L-3819A6DF": 0.0}
        for r in spec.spill_over_order
    }
    problems = preflight.preflight(
        spec, selected_roots(spec, None, True), _clients(low), account=ACCOUNT,
        state_bucket="dlr-terraform-state", ami_dir=tmp_path,
        environ={"TF_VAR_client_vpn_server_certificate_arn": ecdsa},
    )  # fmt: skip
    for line in problems:
        print(line)
    printed = capsys.readouterr().out
    assert "state bucket dlr-terraform-state: does not exist; run `invoke bootstrap-state` first" in printed
    assert "S3 Block Public Access sets BlockPublicPolicy and RestrictPublicBuckets" in printed
    assert "us-west-2: no default VPC: `invoke bake-ami` launches its build instance in it" in printed
    for region in spec.spill_over_order:
        assert f"{region}: no baked image (/dlr/ami/gpu-worker not in SSM" in printed
        assert (
            f"{region}: vCPU quota L-417A185B (Running On-Demand P instances) is 0; the spec's groups reach 8800"
            in printed
        )
    assert ("us-west-2: vCPU quota L-DB2E81BA (Running On-Demand G and VT instances) is 0; every apply launches 96 "
            "vCPUs of it") in printed  # fmt: skip
    assert (
        "us-west-2: vCPU quota L-1216C47A (Running On-Demand standard instances) is 32; every apply launches 56"
        in printed
    )
    assert "us-east-1: vCPU quota L-1216C47A" in printed and "reach 160" in printed
    assert "L-3819A6DF (All G and VT Spot Instance Requests) is 0" in printed
    assert "has a EC_prime256v1 key; Client VPN accepts RSA 1024 or 2048-bit keys only" in printed
    assert "TF_VAR_client_vpn_client_ca_arn is not set" in printed
    assert "deployed images have no digest (nvcr.io/nvidia/k8s-device-plugin:v0.17.4 and " in printed
    assert "run `invoke pin-images`" in printed
    assert "push-autoscaler" not in printed  # its ECR repository comes with the primary region's apply
    assert all("\n" not in line for line in problems) and len(problems) == len(set(problems))


def test_a_prepared_account_passes(aws, spec, tmp_path):
    from provision import images

    pinned = (
        tmp_path / "images.yaml"
    )  # as `invoke pin-images` leaves the table (tests/provision/test_pin_images.py)
    pinned.write_text(images.TABLE.read_text().replace("digest: null", 'digest: "sha256:' + "0" * 64 + '"'))
    from provision import lab_images  # and the lab's own image, as `invoke push-autoscaler` records it

    lab_images.record(lab_images.autoscaler_image(spec), "sha256:" + "1" * 64, "cluster.yaml autoscaler.image",
                      path=pinned)  # fmt: skip
    boto3.client("s3", region_name="us-west-2").create_bucket(
        Bucket="dlr-terraform-state", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    for region in spec.spill_over_order:
        boto3.client("ssm", region_name=region).put_parameter(
            Name="/dlr/ami/gpu-worker", Value="ami-0123456789abcdef0", Type="String"
        )
    rsa_arn = vpn_ca.create(spec, boto3.client("acm", region_name="us-west-2"), tmp_path / "tf", tmp_path).arn
    high = {r: {c: 10_000.0 for c in CODES} for r in spec.spill_over_order}
    problems = preflight.preflight(
        spec, selected_roots(spec, None, True), _clients(high), account=ACCOUNT,
        state_bucket="dlr-terraform-state", ami_dir=tmp_path,
        environ={f"TF_VAR_{v}": rsa_arn for v in preflight.CERTIFICATE_VARIABLES}, image_table=pinned,
    )  # fmt: skip
    assert problems == []


def test_the_vcpus_every_apply_launches(spec):
    needs = preflight.vcpu_needs(spec, "us-west-2")
    # SSH machines g5.12xlarge x 2 = 96 G vCPUs; control plane 3 x 4, pod gateways 2 x 2, SSH cpu 2 x 16, cpu min 1 x 8
    assert needs[("on-demand", "G and VT")].fixed == 96
    assert needs[("on-demand", "standard")].fixed == 12 + 4 + 32 + 8
    assert needs[("spot", "G and VT")].maximum == 30 * 96  # a spot group counts its largest type


def test_the_certificates_may_come_from_the_rendered_roots_tfvars(aws, tmp_path):
    """`invoke up` accepts them in a *.auto.tfvars of the primary root; so does the preflight."""
    arn = vpn_ca.create(
        load_spec(), boto3.client("acm", region_name="us-west-2"), tmp_path / "tf", tmp_path
    ).arn
    root = tmp_path / "us-west-2"
    root.mkdir()
    (root / "vpn.auto.tfvars").write_text(
        f'client_vpn_server_certificate_arn = "{arn}"\nclient_vpn_client_ca_arn = "{arn}"\n'
    )
    assert preflight.check_certificates(load_spec(), _clients({}), {}, root) == []


def test_an_efa_group_needs_a_zone_that_offers_its_types(aws, tmp_path):
    """Against moto's offerings (issue 36): g4dn.8xlarge (EFA) is offered in us-west-2a to c, not d; a region
    listing only us-west-2d is refused in one line, and the zone chosen is the offering one, not the first letter."""
    doc = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    doc["regions"][0]["zones"] = ["us-west-2d", "us-west-2b"]
    doc["regions"][0]["node_groups"] = [
        {"name": "efa-t4", "instance_types": ["g4dn.8xlarge"], "min": 0, "max": 2}
    ]
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(doc))
    ok = load_spec(tmp_path / "ok.yaml")
    (group,) = ok.region("us-west-2").node_groups
    assert preflight.efa_zones(ok, "us-west-2", group, _clients({})) == ["us-west-2b"]
    assert [p for p in preflight.check_zones(ok, ["us-west-2"], _clients({})) if "us-west-2:" in p] == []
    doc["regions"][0]["zones"] = ["us-west-2d"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc))
    bad = load_spec(tmp_path / "bad.yaml")
    (line,) = preflight.check_zones(bad, ["us-west-2"], _clients({}))
    assert line.startswith("us-west-2: EFA group efa-t4 (g4dn.8xlarge) needs one zone that offers every type, and "
                           "none of us-west-2d does")  # fmt: skip


def test_once_its_repository_exists_the_autoscalers_image_needs_pushing(aws, spec, tmp_path, monkeypatch):
    """Issue 36: the lab's own image, after the apply made its ECR repository: the preflight names the task."""
    monkeypatch.delenv("RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG")  # a real account: images by tag are refused
    boto3.client("ecr", region_name="us-west-2").create_repository(repositoryName="dlr/autoscaler")
    (line,) = preflight.check_image_digests(None, spec, _clients({}))[1:]
    assert line.startswith("the autoscaler's image 123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/autoscaler:0.1.0 "
                           "has no digest")  # fmt: skip
    assert "run `invoke push-autoscaler`" in line


def test_an_unreachable_endpoint_is_not_blamed_on_credentials() -> None:
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError

    from provision.preflight import credentials_line

    line = credentials_line(
        EndpointConnectionError(endpoint_url="https://sts.us-west-2.amazonaws.com"), "us-west-2"
    )
    assert line.startswith(
        "preflight: AWS does not answer in us-west-2 (Could not connect to the endpoint URL"
    )
    assert "not your credentials" in line
    assert credentials_line(NoCredentialsError(), "us-west-2") == (
        "preflight: no usable AWS credentials (Unable to locate credentials); configure them (`aws configure sso`) first"
    )


def test_preflight_with_sts_unreachable_says_so(monkeypatch) -> None:
    """The real STS call against a loopback port nobody listens on (AWS_ENDPOINT_URL): the line names the network."""
    import socket

    from clusterspec.loader import load_spec
    from provision.preflight import run

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    (line,) = run(load_spec(), ["global"])
    assert line.startswith("preflight: AWS does not answer in us-west-2") and "not your credentials" in line


def test_images_by_tag_are_a_warning_where_they_are_allowed(monkeypatch, capsys):
    """The local stack and the day-one rehearsal (RESEARCH_CLUSTER_LOCAL_IMAGES_BY_TAG=1) deploy no pinned images:
    as check_pinned, preflight warns instead of stopping."""
    from provision import images, preflight

    monkeypatch.setenv(images.BY_TAG_ENV, "1")
    assert preflight.check_image_digests() == []
    assert "deployed images have no digest" in capsys.readouterr().err
