"""The demo's AWS: a moto server on loopback whose EC2 capacity can run out, as a region's does.

moto launches whatever an Auto Scaling group asks for and records no scaling activities. Here a region can hold
at most N instances of a type (``--limit us-west-2/p3.16xlarge=2``): when a group asks for more, only what fits
is launched, the group keeps its desired capacity (as AWS does), and a **Failed** scaling activity is recorded
with EC2's InsufficientInstanceCapacity message, which ``DescribeScalingActivities`` returns like AWS does.
Everything else is plain moto. The failure lives on the cloud's side of the wire: the autoscaler runs unmodified
and learns of it only through the Auto Scaling API, as it would in AWS.

Run: ``python -m localcluster.aws_server [--port 0] [--limit REGION/TYPE=N ...] [--tls DIR]``; prints one JSON line
``{"url": ...}`` when ready and serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import signal
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from moto.autoscaling import models as asg_models
from moto.autoscaling import responses as asg_responses
from moto.awslambda import urls as lambda_urls
from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.route53 import responses as route53_responses
from moto.s3 import models as s3_models
from moto.servicequotas import responses as sq_responses
from moto.servicequotas.exceptions import NoSuchResource
from moto.ssm import models as ssm_models
from werkzeug.serving import make_server

from localcluster import aws_readback

LIMITS: dict[tuple[str, str], int] = {}
ACTIVITIES: dict[str, list[dict]] = {}  # region -> failed activities, newest first
_ids = itertools.count(1)
_lock = threading.Lock()
_original_launch = asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances


def _running(group, region: str, itype: str) -> int:
    ec2 = group.autoscaling_backend.ec2_backend
    return sum(
        1
        for inst in ec2.all_instances()
        if inst.instance_type == itype and inst.state in ("pending", "running")
    )


def _limited_launch(self, count_needed: int, propagated_tags: dict) -> None:
    region = self.autoscaling_backend.region_name
    itype = self.instance_type
    limit = LIMITS.get((region, itype))
    if limit is not None:
        room = max(0, limit - _running(self, region, itype))
        if count_needed > room:
            _record_failure(self, region, itype, count_needed - room)
            count_needed = room
    if count_needed > 0:
        _original_launch(self, count_needed, propagated_tags)


def _record_failure(group, region: str, itype: str, missing: int) -> None:
    now = datetime.now(UTC)
    zone = sorted(group.availability_zones)[0] if group.availability_zones else f"{region}a"
    activity = {
        "ActivityId": f"demo-ice-{next(_ids):06d}",
        "AutoScalingGroupName": group.name,
        "Description": f"Launching {missing} new EC2 instances.  Status Reason: InsufficientInstanceCapacity",
        "Cause": f"At {now:%Y-%m-%dT%H:%M:%SZ} a user request update of AutoScalingGroup constraints changed "
        "the desired capacity.",
        "StartTime": now,
        "EndTime": now,
        "StatusCode": "Failed",
        "StatusMessage": (
            f"We currently do not have sufficient {itype} capacity in the Availability Zone you requested "
            f"({zone}). Our system will be working on provisioning additional capacity. You can currently get "
            f"{itype} capacity by not specifying an Availability Zone in your request or choosing a different "
            "Availability Zone. Launching EC2 instance failed."
        ),
        "Progress": 100,
    }
    with _lock:
        ACTIVITIES.setdefault(region, []).insert(0, activity)


def _describe_scaling_activities(self) -> ActionResult:
    name = self._get_param("AutoScalingGroupName")
    with _lock:
        acts = [a for a in ACTIVITIES.get(self.region, []) if not name or a["AutoScalingGroupName"] == name]
    return ActionResult({"Activities": acts})


_original_describe = asg_responses.AutoScalingResponse.describe_scaling_activities


_original_permission = s3_models.FakeBucket.get_permission


def _transport_permission(secure: bool):
    """FakeBucket.get_permission evaluating the one condition key moto ignores that the state bucket uses:
    ``aws:SecureTransport`` (moto applies a Deny whatever its Condition, so a TLS-only bucket denies every
    object request). A statement conditioned on it applies only when the transport matches; other statements,
    conditions included, are left to moto as they are."""

    def get_permission(self, action: str, resource: str):
        if self.policy is None:
            return _original_permission(self, action, resource)
        policy = json.loads(self.policy.decode())
        statements = policy.get("Statement", [])
        kept = []
        for st in statements if isinstance(statements, list) else [statements]:
            cond = st.get("Condition", {})
            wanted = cond.get("Bool", {}).get("aws:SecureTransport")
            if wanted is None:
                kept.append(st)
                continue
            if str(wanted).lower() == str(secure).lower():
                rest = {k: v for k, v in cond.items() if k != "Bool"}
                rest_bool = {k: v for k, v in cond.get("Bool", {}).items() if k != "aws:SecureTransport"}
                kept.append({**st, "Condition": rest | ({"Bool": rest_bool} if rest_bool else {})})
                if not kept[-1]["Condition"]:
                    del kept[-1]["Condition"]
        from moto.iam.access_control import IAMPolicy, PermissionResult

        if not kept:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps({**policy, "Statement": kept})).is_action_permitted(action, resource)

    return get_permission


_original_log_permissions = s3_models.FakeBucket._log_permissions_enabled_policy


def _log_permissions(target_bucket, target_prefix) -> bool:
    """PutBucketLogging's check of the target's policy grant to the logging service, without moto's crash on a
    statement whose Principal is "*" (a string: AttributeError, HTTP 500, which the provider retries for ever);
    the TLS-only Deny every bucket of ours has is such a statement. Such statements grant the service nothing,
    so they are passed over, as AWS does."""
    from types import SimpleNamespace

    policy = json.loads(target_bucket.policy.decode()) if target_bucket.policy else {}
    statements = policy.get("Statement", [])
    kept = [st for st in statements if isinstance(st.get("Principal"), dict)]
    view = SimpleNamespace(
        policy=json.dumps({**policy, "Statement": kept}).encode() if target_bucket.policy else None,
        partition=target_bucket.partition,
        name=target_bucket.name,
    )
    return _original_log_permissions(view, target_prefix)


def install_transport(secure: bool) -> None:
    """S3 bucket policies see this server's transport (TLS or plain HTTP) in ``aws:SecureTransport``; and
    PutBucketLogging reads a policy with a "*" principal (``_log_permissions``)."""
    s3_models.FakeBucket.get_permission = _transport_permission(secure)
    s3_models.FakeBucket._log_permissions_enabled_policy = staticmethod(_log_permissions)


# --- the account's EC2 vCPU quotas (Service Quotas). moto answers only service code vpc; a new AWS account has
# these defaults (Service Quotas console, "Amazon Elastic Compute Cloud (Amazon EC2)"; new accounts start low and
# GPU families at 0), and an increase request is approved at once here (in AWS: a support case, hours to days).
EC2_DEFAULT_QUOTAS = {
    "L-1216C47A": ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 5.0),
    "L-DB2E81BA": ("Running On-Demand G and VT instances", 0.0),
    "L-417A185B": ("Running On-Demand P instances", 0.0),
    "L-34B43A08": ("All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", 5.0),
    "L-3819A6DF": ("All G and VT Spot Instance Requests", 0.0),
    "L-7212CCBC": ("All P Spot Instance Requests", 0.0),
}
APPLIED_QUOTAS: dict[tuple[str, str], float] = {}  # (region, code) -> the value an approved request set


def _quota(region: str, code: str, value: float) -> dict:
    return {
        "ServiceCode": "ec2",
        "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
        "QuotaArn": f"arn:aws:servicequotas:{region}::ec2/{code}",
        "QuotaCode": code,
        "QuotaName": EC2_DEFAULT_QUOTAS[code][0],
        "Value": value,
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
    }


_original_defaults = sq_responses.ServiceQuotasResponse.list_aws_default_service_quotas


def _list_default_quotas(self) -> str:
    if json.loads(self.body).get("ServiceCode") != "ec2":
        return _original_defaults(self)
    return json.dumps({"Quotas": [_quota(self.region, c, v) for c, (_, v) in EC2_DEFAULT_QUOTAS.items()]})


def _list_quotas(self) -> str:
    code = json.loads(self.body).get("ServiceCode")
    with _lock:
        applied = [(c, v) for (r, c), v in APPLIED_QUOTAS.items() if r == self.region]
    return json.dumps({"Quotas": [_quota(self.region, c, v) for c, v in applied] if code == "ec2" else []})


def _request_increase(self) -> str:
    params = json.loads(self.body)
    code, value = params.get("QuotaCode"), float(params.get("DesiredValue", 0))
    if params.get("ServiceCode") != "ec2" or code not in EC2_DEFAULT_QUOTAS:
        raise NoSuchResource
    with _lock:
        APPLIED_QUOTAS[(self.region, code)] = value
    return json.dumps({"RequestedQuota": {"Id": f"demo-quota-{next(_ids):06d}", "QuotaCode": code,
                                          "ServiceCode": "ec2", "DesiredValue": value, "Status": "APPROVED"}})  # fmt: skip


# --- Canonical's public SSM parameters of Ubuntu images (the SSH machines' CPU image). moto publishes only Amazon
# Linux's, ECS's and the global-infrastructure trees; AWS publishes these in every region. They name one of the
# region's images (moto's image catalogue has no Canonical ones).
CANONICAL_PARAMETERS = (
    "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
)
_original_loading = ssm_models.ParameterDict._check_loading_status


def _check_loading_status(self, key: str) -> None:
    _original_loading(self, key)
    if str(key or "").startswith("/aws/service/canonical/") and not getattr(self, "canonical_loaded", False):
        from moto.ec2.models import ec2_backends

        images = ec2_backends[self.account_id][self.region_name].describe_images()
        image = next((i for i in images if "ubuntu" in (i.name or "").lower()), images[0]).id
        for name in CANONICAL_PARAMETERS:
            super(ssm_models.ParameterDict, self).__getitem__(name).append(
                ssm_models.Parameter(
                    account_id=self.account_id,
                    name=name,
                    value=image,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=utcnow(),
                    version=1,
                    data_type="aws:ec2:image",
                )  # fmt: skip
            )
        self.canonical_loaded = True


# --- Lambda's GetAccountSettings (the preflight's concurrency check): moto has no route for it. A new account's
# defaults (Lambda Developer Guide, "Lambda quotas": 1,000 concurrent executions), less what functions reserve.
LAMBDA_CONCURRENCY = 1000
LAMBDA_ACCOUNT_SETTINGS = r"{0}/(?P<api_version>[^/]+)/account-settings/?$"


def _lambda_account_settings(request, full_url, headers):
    from moto.awslambda.models import lambda_backends
    from moto.core import DEFAULT_ACCOUNT_ID

    backend = lambda_backends[DEFAULT_ACCOUNT_ID][_region_of(headers) or "us-east-1"]
    reserved = sum(int(getattr(f, "reserved_concurrency", None) or 0) for f in backend.list_functions())
    body = {
        "AccountLimit": {
            "TotalCodeSize": 80530636800,
            "CodeSizeUnzipped": 262144000,
            "CodeSizeZipped": 52428800,
            "ConcurrentExecutions": LAMBDA_CONCURRENCY,
            "UnreservedConcurrentExecutions": LAMBDA_CONCURRENCY - reserved,
        },
        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": len(backend.list_functions())},
    }
    return 200, {"Content-Type": "application/json"}, json.dumps(body)


def _region_of(headers) -> str | None:
    """The region a SigV4 request was signed for (Authorization: ... Credential=KEY/DATE/REGION/SERVICE/...)."""
    auth = headers.get("Authorization", "") if headers else ""
    parts = auth.split("Credential=", 1)[-1].split("/")
    return parts[2] if len(parts) > 3 else None


# --- EC2 actions moto does not implement that the roots call: MonitorInstances (every instance has detailed
# monitoring) and placement groups (the EFA groups' cluster placement). The answers follow the EC2 API Reference.
PLACEMENT_GROUPS: dict[tuple[str, str], dict] = {}  # (region, name) -> group
_original_create_zone = route53_responses.Route53.create_hosted_zone
_EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def _ec2_xml(action: str, body: str) -> str:
    return f'<{action}Response xmlns="{_EC2_NS}"><requestId>{next(_ids):08d}</requestId>{body}</{action}Response>'


def _monitoring(self, state: str, action: str) -> str:
    items = []
    for instance_id in self._get_param("InstanceIds", []):
        instance = self.ec2_backend.get_instance(instance_id)
        instance.monitoring_state = state
        items.append(
            f"<item><instanceId>{instance_id}</instanceId><monitoring><state>{state}</state></monitoring></item>"
        )
    return _ec2_xml(action, f"<instancesSet>{''.join(items)}</instancesSet>")


def _placement_group_xml(g: dict) -> str:
    tags = "".join(f"<item><key>{k}</key><value>{v}</value></item>" for k, v in g["tags"].items())
    return (f"<groupName>{g['name']}</groupName><groupId>{g['id']}</groupId><groupArn>{g['arn']}</groupArn>"
            f"<state>available</state><strategy>{g['strategy']}</strategy><tagSet>{tags}</tagSet>")  # fmt: skip


def _create_placement_group(self) -> str:
    name, strategy = self._get_param("GroupName"), self._get_param("Strategy")
    tags = self._parse_tag_specification().get("placement-group", {})
    gid = f"pg-{next(_ids):017x}"
    group = {"name": name, "strategy": strategy, "id": gid, "tags": tags,
             "arn": f"arn:aws:ec2:{self.region}:{self.current_account}:placement-group/{name}"}  # fmt: skip
    with _lock:
        if (self.region, name) in PLACEMENT_GROUPS:
            from moto.ec2.exceptions import EC2ClientError

            raise EC2ClientError(
                "InvalidPlacementGroup.Duplicate", f"The Placement Group '{name}' already exists."
            )
        PLACEMENT_GROUPS[(self.region, name)] = group
    return _ec2_xml("CreatePlacementGroup", f"<placementGroup>{_placement_group_xml(group)}</placementGroup>")


def _describe_placement_groups(self) -> str:
    names, ids = self._get_param("GroupNames", []), self._get_param("GroupIds", [])
    with _lock:
        groups = [g for (r, n), g in PLACEMENT_GROUPS.items() if r == self.region]
    wanted = [g for g in groups if (not names and not ids) or g["name"] in names or g["id"] in ids]
    missing = [n for n in names if n not in {g["name"] for g in wanted}]
    if missing:
        from moto.ec2.exceptions import EC2ClientError

        raise EC2ClientError(
            "InvalidPlacementGroup.Unknown", f"The Placement Group '{missing[0]}' is unknown."
        )
    items = "".join(f"<item>{_placement_group_xml(g)}</item>" for g in wanted)
    return _ec2_xml("DescribePlacementGroups", f"<placementGroupSet>{items}</placementGroupSet>")


def _delete_placement_group(self) -> str:
    with _lock:
        PLACEMENT_GROUPS.pop((self.region, self._get_param("GroupName")), None)
    return _ec2_xml("DeletePlacementGroup", "<return>true</return>")


def _create_hosted_zone(self):
    """Route 53 CreateHostedZone: a zone created with a VPC is private (Route 53 API Reference, CreateHostedZone:
    "to create a private hosted zone, specify ... VPC"); moto makes it private only on HostedZoneConfig.PrivateZone,
    which the provider does not send, so the other regions' lookup of the private zone found nothing."""
    if self._get_param("VPC.VPCId"):
        plain = self._get_bool_param
        self._get_bool_param = lambda name, default=None: (
            True if name == "HostedZoneConfig.PrivateZone" else plain(name, default)
        )
    return _original_create_zone(self)


def install_ec2() -> None:
    from moto.ec2.responses import EC2Response

    PLACEMENT_GROUPS.clear()
    EC2Response.monitor_instances = lambda self: _monitoring(self, "enabled", "MonitorInstances")
    EC2Response.unmonitor_instances = lambda self: _monitoring(self, "disabled", "UnmonitorInstances")
    EC2Response.create_placement_group = _create_placement_group
    EC2Response.describe_placement_groups = _describe_placement_groups
    EC2Response.delete_placement_group = _delete_placement_group
    route53_responses.Route53.create_hosted_zone = _create_hosted_zone


def install_account() -> None:
    """The account-level answers moto lacks (EC2 quotas and their increase requests); see EC2_DEFAULT_QUOTAS."""
    APPLIED_QUOTAS.clear()
    sq_responses.ServiceQuotasResponse.list_aws_default_service_quotas = _list_default_quotas
    sq_responses.ServiceQuotasResponse.list_service_quotas = _list_quotas
    sq_responses.ServiceQuotasResponse.request_service_quota_increase = _request_increase
    ssm_models.ParameterDict._check_loading_status = _check_loading_status
    lambda_urls.url_paths.setdefault(
        r"{0}/(?P<api_version>[^/]+)/account-settings/?$", _lambda_account_settings
    )


def install(limits: dict[tuple[str, str], int]) -> None:
    """Limit capacity in this process's moto (the server's), and answer DescribeScalingActivities."""
    LIMITS.clear()
    LIMITS.update(limits)
    ACTIVITIES.clear()
    asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = _limited_launch
    asg_responses.AutoScalingResponse.describe_scaling_activities = _describe_scaling_activities


def uninstall() -> None:
    """Plain moto again (tests that share the process)."""
    LIMITS.clear()
    ACTIVITIES.clear()
    asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = _original_launch
    asg_responses.AutoScalingResponse.describe_scaling_activities = _original_describe
    s3_models.FakeBucket.get_permission = _original_permission
    s3_models.FakeBucket._log_permissions_enabled_policy = staticmethod(_original_log_permissions)
    route53_responses.Route53.create_hosted_zone = _original_create_zone
    APPLIED_QUOTAS.clear()
    sq_responses.ServiceQuotasResponse.list_aws_default_service_quotas = _original_defaults
    for name in ("list_service_quotas", "request_service_quota_increase"):
        if name in vars(sq_responses.ServiceQuotasResponse):
            delattr(sq_responses.ServiceQuotasResponse, name)
    ssm_models.ParameterDict._check_loading_status = _original_loading
    lambda_urls.url_paths.pop(LAMBDA_ACCOUNT_SETTINGS, None)
    aws_readback.uninstall()


def parse_limit(text: str) -> tuple[tuple[str, str], int]:
    key, sep, value = text.partition("=")
    region, slash, itype = key.partition("/")
    if not (sep and slash and region and itype and value.isdigit()):
        raise ValueError(f"--limit {text!r}: expected REGION/INSTANCE-TYPE=N, e.g. us-west-2/p3.16xlarge=2")
    return (region, itype), int(value)


def tls_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (``cert.pem``, its key ``key.pem``) in FOLDER: what
    clients trust (AWS_CA_BUNDLE, SSL_CERT_FILE) to reach the server over TLS, as they reach AWS."""
    import ipaddress
    from datetime import timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "embedded AWS (moto) on loopback")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def serve(port: int = 0, tls: tuple[Path, Path] | None = None):
    """A threaded moto server on 127.0.0.1 (port 0: a free one), over TLS with TLS's (certificate, key); returns
    the werkzeug server."""
    app = DomainDispatcherApplication(create_backend_app)
    ssl_context = None
    if tls:
        import ssl

        ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_context.load_cert_chain(str(tls[0]), str(tls[1]))
    return make_server(
        "127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler, ssl_context=ssl_context
    )


def load_managed_policies() -> None:
    """IAM knows AWS's managed policies (moto's copy of the list), as an account does: attaching one that does not
    exist, or under the wrong path, fails with NoSuchEntity as in AWS (moto loads them only when asked)."""
    import os

    os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m localcluster.aws_server", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--limit", action="append", default=[], metavar="REGION/TYPE=N")
    ap.add_argument(
        "--spec",
        metavar="PATH",
        help="create the spec's node groups (launch templates, tagged groups) at start",
    )
    ap.add_argument(
        "--tls",
        metavar="DIR",
        help="serve HTTPS with a self-signed certificate written to DIR/cert.pem (what clients trust: "
        "AWS_CA_BUNDLE); a bucket policy that denies plain HTTP (the state bucket's) then admits the clients",
    )
    args = ap.parse_args(argv)
    try:
        limits = dict(parse_limit(x) for x in args.limit)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    install(limits)
    tls = tls_certificate(Path(args.tls)) if args.tls else None
    install_transport(secure=tls is not None)
    install_account()
    install_ec2()
    aws_readback.install()  # what moto drops of what it was given (the day-one rehearsal's second plan)
    load_managed_policies()
    server = serve(args.port, tls)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True, name="moto").start()
    if args.spec:
        from clusterspec.errors import UserError
        from clusterspec.loader import load_spec
        from localcluster.aws_bootstrap import create_groups

        try:
            spec = load_spec(args.spec)
        except UserError as e:
            print("\n".join(e.lines), file=sys.stderr)
            server.shutdown()
            return 2
        create_groups(spec, url, list(spec.spill_over_order))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(json.dumps({"url": url} | ({"ca_bundle": str(tls[0])} if tls else {})), flush=True)
    done.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
