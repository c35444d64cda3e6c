"""`invoke preflight` (also the first step of `invoke up`): what a fresh account must have before Terraform
runs, checked against the spec, one line per problem (what is missing, and the command or request that fixes it).

- vCPU quotas (Service Quotas, EC2 "vCPU-based On-Demand Instance limits" and Spot limits) per region and
  family (G and VT, P, standard; each for on-demand and spot): the instances every apply launches (control plane,
  pod gateways, SSH machines, the groups' minima) must fit, and so must the groups' maxima;
- Lambda: at least one unreserved concurrent execution for the pod gateway's failover function;
- the baked image's SSM parameter ``/<cluster>/ami/gpu-worker`` in every region to apply (or ``build/ami``);
- the bake's network: a default VPC in the bake region (Packer's amazon-ebs launches its build instance there);
- the Client VPN certificates: in ACM in the primary region, issued, and what Client VPN accepts of them (RSA
  1024/2048 keys, valid now, serverAuth on the server certificate, a chain each link of which signs the one before:
  provision/vpn_rules.py); `invoke vpn-ca` makes and imports them;
- each EFA group's zone: one of the region's zones in the spec that EC2 offers every instance type of the group in
  (DescribeInstanceTypeOfferings, the call the node_group module chooses the zone by); the zones themselves exist
  for the account (DescribeAvailabilityZones);
- S3 Block Public Access of the account against the OIDC issuer bucket, whose two documents must be public;
- the state bucket: present and ours (`invoke bootstrap-state`);
- the deployed images' digests (provision/data/images.yaml), which the deploys after the apply require
  (`invoke pin-images`).

AWS is reached through ``clients(service, region)`` so the tests give moto's clients, and botocore Stubbers for
Service Quotas (moto has no quota values).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from clusterspec import catalog
from clusterspec.spec import Cluster
from provision import vpn_rules

Clients = Callable[[str, str], object]

# Service Quotas codes (service ec2): the vCPU quotas of the instance families the cluster launches.
ON_DEMAND = {"standard": "L-1216C47A", "G and VT": "L-DB2E81BA", "P": "L-417A185B"}
SPOT = {"standard": "L-34B43A08", "G and VT": "L-3819A6DF", "P": "L-7212CCBC"}
STANDARD = set("acdhimrtz")  # Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances
# Client VPN accepts RSA keys of 1024 or 2048 bits only (AWS Client VPN Administrator Guide, "Mutual
# authentication": server and client certificates).
CLIENT_VPN_KEYS = {"RSA_1024", "RSA_2048"}
CERTIFICATE_VARIABLES = ("client_vpn_server_certificate_arn", "client_vpn_client_ca_arn")


def family(instance_type: str) -> str:
    name = instance_type.split(".", 1)[0]
    if name[0] in "gv":
        return "G and VT"
    if name[0] == "p":
        return "P"
    if name[0] in STANDARD:
        return "standard"
    return "other"


@dataclass
class Need:
    fixed: float = 0  # vCPUs every apply launches
    maximum: float = 0  # vCPUs at the groups' maxima


def vcpu_needs(cluster: Cluster, region: str) -> dict[tuple[str, str], Need]:
    """(on-demand | spot, family) => the vCPUs the spec launches in REGION."""
    table = catalog.instance_types()
    needs: dict[tuple[str, str], Need] = {}

    def add(kind: str, itype: str, fixed: int, maximum: int) -> None:
        n = needs.setdefault((kind, family(itype)), Need())
        n.fixed += fixed * table[itype].vcpu
        n.maximum += maximum * table[itype].vcpu

    for g in cluster.region(region).node_groups:
        # a spot group may get any of its types: count the largest
        itype = max(g.instance_types, key=lambda t: table[t].vcpu)
        add("spot" if g.spot else "on-demand", itype, g.min, g.max)
    if region == cluster.primary_region:
        cp = cluster.kubernetes.control_plane
        add("on-demand", cp.instance_type, cp.count, cp.count)
        r = cluster.researchers
        add("on-demand", r.pod_gateway.instance_type, r.pod_gateway.count, r.pod_gateway.count)
        for m in r.ssh_machines:
            add("on-demand", m.instance_type, m.count, m.count)
    return needs


def quotas(clients: Clients, region: str) -> dict[str, float]:
    """EC2's applied quota values in REGION (ListServiceQuotas), defaults for the ones never applied."""
    sq = clients("service-quotas", region)
    values: dict[str, float] = {}
    for op in ("list_aws_default_service_quotas", "list_service_quotas"):  # applied values win
        token = None
        while True:
            page = getattr(sq, op)(ServiceCode="ec2", **({"NextToken": token} if token else {}))
            values |= {q["QuotaCode"]: float(q["Value"]) for q in page.get("Quotas", [])}
            token = page.get("NextToken")
            if not token:
                break
    return values


def check_quotas(cluster: Cluster, regions: list[str], clients: Clients) -> list[str]:
    out = []
    for region in regions:
        have_all = quotas(clients, region)
        for (kind, fam), need in sorted(vcpu_needs(cluster, region).items()):
            code = (SPOT if kind == "spot" else ON_DEMAND).get(fam)
            if code is None:
                continue
            have = have_all.get(code, 0.0)
            name = f"{'All ' + fam + ' Spot Instance Requests' if kind == 'spot' else 'Running On-Demand ' + fam + ' instances'}"
            ask = (f"request at least {need.maximum:.0f} vCPUs: `aws service-quotas request-service-quota-increase "
                   f"--region {region} --service-code ec2 --quota-code {code} --desired-value {need.maximum:.0f}`")  # fmt: skip
            if need.fixed > have:
                out.append(f"{region}: vCPU quota {code} ({name}) is {have:.0f}; every apply launches "
                           f"{need.fixed:.0f} vCPUs of it (control plane, pod gateways, SSH machines, the groups' "
                           f"minima), so the apply would fail; {ask}")  # fmt: skip
            elif need.maximum > have:
                out.append(f"{region}: vCPU quota {code} ({name}) is {have:.0f}; the spec's groups reach "
                           f"{need.maximum:.0f} vCPUs at their maxima, so the autoscaler stops short; {ask}")  # fmt: skip
    return out


def check_lambda(cluster: Cluster, clients: Clients) -> list[str]:
    region = cluster.primary_region
    limit = clients("lambda", region).get_account_settings()["AccountLimit"]
    free = limit.get("UnreservedConcurrentExecutions", limit.get("ConcurrentExecutions", 0))
    if free < 1:
        return [f"{region}: Lambda has {free} unreserved concurrent executions; the pod gateway's failover function "
                "needs one: release reserved concurrency or request quota L-B99A9384 (Concurrent executions)"]  # fmt: skip
    return []


def check_images(cluster: Cluster, regions: list[str], clients: Clients, ami_dir: Path) -> list[str]:
    name = f"/{cluster.name}/ami/gpu-worker"
    out = []
    for region in regions:
        if (ami_dir / f"{region}.json").exists():
            continue
        try:
            clients("ssm", region).get_parameter(Name=name)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ParameterNotFound":
                raise
            out.append(f"{region}: no baked image ({name} not in SSM, no build/ami/{region}.json): the plan reads it; "
                       "run `invoke bake-ami` first (it copies the image to every region)")  # fmt: skip
    return out


def efa_zones(cluster: Cluster, region: str, group, clients: Clients) -> list[str]:
    """The spec's zones of REGION where EC2 offers every instance type of GROUP, in the spec's order."""
    ec2 = clients("ec2", region)
    zones = cluster.region(region).zones
    offered: dict[str, set[str]] = {}
    token = None
    while True:
        page = ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": list(group.instance_types)},
                     {"Name": "location", "Values": list(zones)}],
            **({"NextToken": token} if token else {}),
        )  # fmt: skip
        for o in page.get("InstanceTypeOfferings", []):
            offered.setdefault(o["Location"], set()).add(o["InstanceType"])
        token = page.get("NextToken")
        if not token:
            break
    return [z for z in zones if set(group.instance_types) <= offered.get(z, set())]


def check_zones(cluster: Cluster, regions: list[str], clients: Clients) -> list[str]:
    table = catalog.instance_types()
    out = []
    for region in regions:
        spec_zones = cluster.region(region).zones
        ec2 = clients("ec2", region)
        have = {z["ZoneName"] for z in ec2.describe_availability_zones(
            Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}])["AvailabilityZones"]}  # fmt: skip
        missing = [z for z in spec_zones if z not in have]
        if missing:
            out.append(f"{region}: this account has no zone {', '.join(missing)} (it has {', '.join(sorted(have))}); "
                       "list only those in cluster.yaml's regions[].zones")  # fmt: skip
            continue
        for g in cluster.region(region).node_groups:
            if min(table[t].efa for t in g.instance_types) == 0:
                continue
            if not efa_zones(cluster, region, g, clients):
                types = ", ".join(g.instance_types)
                out.append(f"{region}: EFA group {g.name} ({types}) needs one zone that offers every type, and none "
                           f"of {', '.join(spec_zones)} does (`aws ec2 describe-instance-type-offerings --region "
                           f"{region} --location-type availability-zone --filters Name=instance-type,Values={types}`): "
                           "add such a zone to the region or change the group's types")  # fmt: skip
    return out


def check_bake_network(cluster: Cluster, clients: Clients) -> list[str]:
    region = cluster.primary_region
    vpcs = clients("ec2", region).describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
    if vpcs:
        return []
    return [f"{region}: no default VPC: `invoke bake-ami` launches its build instance in it (Packer amazon-ebs "
            f"without a subnet); create one with `aws ec2 create-default-vpc --region {region}`"]  # fmt: skip


def tfvars(root: Path) -> dict[str, str]:
    """String variables of a rendered root's ``*.auto.tfvars`` and ``terraform.tfvars`` (what `up` also accepts)."""
    import re

    found: dict[str, str] = {}
    for path in sorted(root.glob("*.auto.tfvars")) + [root / "terraform.tfvars"]:
        if path.is_file():
            found |= dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', path.read_text(), re.M))
    return found


def check_certificates(
    cluster: Cluster, clients: Clients, environ: dict, root: Path | None = None
) -> list[str]:
    region = cluster.primary_region
    out = []
    acm = clients("acm", region)
    files = tfvars(root) if root else {}
    for var in CERTIFICATE_VARIABLES:
        arn = environ.get(f"TF_VAR_{var}") or files.get(var)
        if not arn:
            out.append(f"{region}: TF_VAR_{var} is not set: run `invoke vpn-ca` (it makes the Client VPN's CA and "
                       f"server certificate, imports them into ACM in {region} and writes their ARN into the "
                       "primary root's client_vpn.auto.tfvars; docs/terraform.md)")  # fmt: skip
            continue
        if f":acm:{region}:" not in arn:
            out.append(
                f"TF_VAR_{var}: {arn} is not in {region}; Client VPN takes certificates of its own region"
            )
            continue
        try:
            cert = acm.describe_certificate(CertificateArn=arn)["Certificate"]
        except ClientError as e:
            out.append(
                f"TF_VAR_{var}: {arn}: {e.response.get('Error', {}).get('Code', e)}; import it into ACM first"
            )
            continue
        if cert.get("Status") != "ISSUED":
            out.append(f"TF_VAR_{var}: {arn} is {cert.get('Status')}, not ISSUED")
            continue
        if cert.get("KeyAlgorithm") not in CLIENT_VPN_KEYS:
            out.append(f"TF_VAR_{var}: {arn} has a {cert.get('KeyAlgorithm')} key; Client VPN accepts RSA 1024 or "
                       "2048-bit keys only (Client VPN Administrator Guide, \"Mutual authentication\"): issue it "
                       "with `invoke vpn-ca`")  # fmt: skip
            continue
        body = acm.get_certificate(CertificateArn=arn)
        role = vpn_rules.SERVER if var == "client_vpn_server_certificate_arn" else vpn_rules.CLIENT_CA
        out += [f"TF_VAR_{var}: {arn} {p}" for p in vpn_rules.problems(role, body["Certificate"],
                                                                         body.get("CertificateChain"))]  # fmt: skip
    return out


def check_public_access(cluster: Cluster, clients: Clients, account: str) -> list[str]:
    s3control = clients("s3control", cluster.primary_region)
    try:
        block = s3control.get_public_access_block(AccountId=account)["PublicAccessBlockConfiguration"]
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "NoSuchPublicAccessBlockConfiguration":
            return []
        raise
    blocking = [k for k in ("BlockPublicPolicy", "RestrictPublicBuckets") if block.get(k)]
    if not blocking:
        return []
    return [f"account {account}: S3 Block Public Access sets {' and '.join(blocking)}: the OIDC issuer bucket's "
            "two documents cannot be public, so STS can never verify a service-account token (the autoscaler and "
            "researchers' pods get no AWS credentials); turn them off at the account level "
            "(`aws s3control put-public-access-block`), keeping BlockPublicAcls and IgnorePublicAcls"]  # fmt: skip


def check_state_bucket(bucket: str, region: str, clients: Clients) -> list[str]:
    try:
        clients("s3", region).head_bucket(Bucket=bucket)
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket", "NotFound"):
            return [f"state bucket {bucket}: does not exist; run `invoke bootstrap-state` first"]
        if code in ("403", "AccessDenied", "Forbidden"):
            return [f"state bucket {bucket}: exists but is not this account's (or not readable): choose another "
                    "name with `--state-bucket`"]  # fmt: skip
        raise
    return []


def check_image_digests(table: Path | None = None, cluster: Cluster | None = None,
                        clients: Clients | None = None) -> list[str]:  # fmt: skip
    """The deploys after the primary region's apply refuse images by tag (provision/images.py ``check_pinned``):
    say so before the apply, with the command that records them: `invoke pin-images` for the third-party images,
    `invoke push-autoscaler` for the lab's own (provision/lab_images.py) once its ECR repository exists (the
    primary region's apply makes it: on a fresh account there is nothing to push to yet, and no line)."""
    from clusterspec.errors import UserError
    from provision import images, lab_images, pin_images

    path = table or images.TABLE
    images.table.cache_clear()
    entries = images.table(path)
    missing = pin_images.pending(entries)
    out = []
    if (
        missing and os.environ.get(images.BY_TAG_ENV) == "1"
    ):  # as check_pinned: the local stack, the rehearsal
        print(
            f"warning: {len(missing)} deployed images have no digest ({images.BY_TAG_ENV}=1)", file=sys.stderr
        )
        missing = []
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        out.append(f"{len(missing)} deployed images have no digest ({missing[0]}{more}): the add-ons, the scheduler "
                   "and the autoscaler would not deploy after the apply; run `invoke pin-images` and commit "
                   "provision/data/images.yaml")  # fmt: skip
    if cluster is not None:
        try:
            own = lab_images.autoscaler_image(cluster)
        except UserError as e:
            return [*out, str(e)]
        if (
            "@sha256:" not in own
            and not (entries.get(own) or {}).get("digest")
            and _repository_exists(clients, cluster.primary_region, lab_images.autoscaler_repository(cluster))
        ):
            out.append(f"the autoscaler's image {own} has no digest in {path}: run `invoke push-autoscaler` (it "
                       "builds deploy/Dockerfile, pushes it to the lab's ECR repository and records the digest "
                       "read back with credentials)")  # fmt: skip
    return out


def _repository_exists(clients: Clients | None, region: str, name: str) -> bool:
    if clients is None:
        return True
    try:
        clients("ecr", region).describe_repositories(repositoryNames=[name])
        return True
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "RepositoryNotFoundException":
            return False
        raise


def preflight(cluster: Cluster, roots: list[str], clients: Clients, *, account: str, state_bucket: str,
              ami_dir: Path, environ: dict | None = None, out_dir: Path | None = None,
              image_table: Path | None = None) -> list[str]:  # fmt: skip
    """Every problem for applying ROOTS (``global`` and/or regions) on this account, one line each."""
    environ = dict(os.environ) if environ is None else environ
    regions = [r for r in roots if r != "global"]
    checks: list[tuple[str, Callable[[], list[str]]]] = [
        ("the state bucket", lambda: check_state_bucket(state_bucket, cluster.primary_region, clients))
    ]
    if "global" in roots:
        checks.append(("S3 Block Public Access", lambda: check_public_access(cluster, clients, account)))
    if regions:
        seen: dict[str, list[str]] = {}

        def images() -> list[str]:
            if "images" not in seen:
                seen["images"] = check_images(cluster, regions, clients, ami_dir)
            return seen["images"]

        checks.append(("the baked image", images))
        checks.append(
            ("the bake's network", lambda: check_bake_network(cluster, clients) if images() else [])
        )
        checks.append(("vCPU quotas", lambda: check_quotas(cluster, regions, clients)))
        checks.append(("the zones and EFA placement", lambda: check_zones(cluster, regions, clients)))
    if cluster.primary_region in regions:
        checks.append(("Lambda concurrency", lambda: check_lambda(cluster, clients)))
        root = out_dir / cluster.primary_region if out_dir else None
        checks.append(
            ("the Client VPN certificates", lambda: check_certificates(cluster, clients, environ, root))
        )
        checks.append(("the images' digests", lambda: check_image_digests(image_table, cluster, clients)))
    out: list[str] = []
    for what, check in checks:
        try:
            out += check()
        except (BotoCoreError, ClientError) as e:
            out.append(f"preflight: cannot check {what}: {e}")
    return out


def credentials_line(e: Exception, region: str) -> str:
    """Why STS did not say who we are: the endpoint not reached is not a credentials problem (issue 37)."""
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ProxyConnectionError

    if isinstance(e, EndpointConnectionError | ConnectTimeoutError | ProxyConnectionError):
        return (f"preflight: AWS does not answer in {region} ({e}); check the network, a proxy or "
                "AWS_ENDPOINT_URL, not your credentials")  # fmt: skip
    return f"preflight: no usable AWS credentials ({e}); configure them (`aws configure sso`) first"


def run(cluster: Cluster, roots: list[str], state_bucket: str | None = None, ami_dir: Path | None = None,
        out_dir: Path | None = None) -> list[str]:  # fmt: skip
    """`invoke preflight` against the account of the current credentials; prints the lines, returns them."""
    import boto3

    from provision.terraform import endpoint
    from provision.terraform.settings import AMI_DIR, DEFAULT_OUT, Backend

    session = boto3.Session()
    made: dict = {}

    def clients(service: str, region: str):
        return made.setdefault((service, region), endpoint.client(session, service, region))

    try:
        account = clients("sts", cluster.primary_region).get_caller_identity()["Account"]
    except (BotoCoreError, ClientError) as e:
        return [credentials_line(e, cluster.primary_region)]
    bucket = Backend.for_cluster(cluster.name, cluster.primary_region, state_bucket).bucket
    return preflight(
        cluster, roots, clients, account=account, state_bucket=bucket, ami_dir=ami_dir or AMI_DIR,
        out_dir=out_dir or DEFAULT_OUT,
    )  # fmt: skip
