"""The cluster spec (``cluster.yaml``): a pydantic model of the whole cluster.

Everything else (Terraform roots, Packer variables, Chef attributes, the autoscaler's deployment) is generated
from one validated :class:`Cluster`. Field-level rules live on the models; rules that relate several fields
(overlapping networks, driver/GPU compatibility, zones in their region) live in :mod:`clusterspec.checks`.
"""

from __future__ import annotations

import ipaddress
from functools import cached_property
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from clusterspec import catalog
from clusterspec.names import IMAGE_ROOT_GIB


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError(f"malformed CIDR {value!r}: expected a network address like 10.0.0.0/16") from None
    if net.version != 4:
        raise ValueError(f"{value!r} is IPv6; the cluster's networks are IPv4 (e.g. 10.0.0.0/16)")
    return str(net)


def _ipv4(value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ValueError(f"malformed IPv4 address {value!r}: expected e.g. 203.0.113.10") from None


Cidr = Annotated[str, AfterValidator(_cidr)]
IPv4 = Annotated[str, AfterValidator(_ipv4)]
DnsLabel = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def as_kubelet_arg(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class NodeGroup(Strict):
    name: DnsLabel
    instance_types: list[str] = Field(
        min_length=1, description="first is the primary; more only for spot groups"
    )
    min: int = Field(ge=0)
    max: int = Field(ge=0)
    spot: bool = False
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    priority: int = 0
    warm_pool: int = Field(0, ge=0, description="idle nodes kept ready for quick experiments")
    root_volume_gib: int = Field(200, ge=IMAGE_ROOT_GIB)  # the baked image's root snapshot

    @property
    def instance_type(self) -> str:
        return self.instance_types[0]

    @property
    def gpus(self) -> int:
        return catalog.instance_type(self.instance_type).gpus

    @property
    def gpu_model(self) -> str | None:
        return catalog.instance_type(self.instance_type).gpu_model


class Region(Strict):
    name: str
    cidr: Cidr
    zones: list[str] = Field(min_length=1)
    node_groups: list[NodeGroup] = []


class Gateway(Strict):
    public_ip: IPv4 = Field(description="public address of the site's strongSwan gateway")
    private_ip: IPv4
    bgp_asn: int = Field(65010, ge=1, le=4294967294)


class Server(Strict):
    name: DnsLabel
    ip: IPv4
    gpus: int = Field(ge=0)
    gpu_model: str | None = None
    roles: list[Literal["gateway", "nfs", "worker"]] = ["worker"]
    labels: dict[str, str] = {}
    taints: list[Taint] = []


class Site(Strict):
    name: DnsLabel
    cidr: Cidr
    gateway: Gateway
    servers: list[Server] = Field(min_length=1)


class TunnelCrypto(Strict):
    """IKE/ESP proposals shared by the AWS site-to-site VPN (Terraform) and strongSwan (Chef)."""

    ike_version: Literal[2] = 2
    ike_encryption: list[Literal["AES128", "AES256", "AES128-GCM-16", "AES256-GCM-16"]] = ["AES256"]
    ike_integrity: list[Literal["SHA2-256", "SHA2-384", "SHA2-512"]] = ["SHA2-256"]
    dh_groups: list[Literal[14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]] = [14]
    esp_encryption: list[Literal["AES128", "AES256", "AES128-GCM-16", "AES256-GCM-16"]] = ["AES256"]
    esp_integrity: list[Literal["SHA2-256", "SHA2-384", "SHA2-512"]] = ["SHA2-256"]
    ike_lifetime_s: int = Field(28800, ge=900, le=28800)
    esp_lifetime_s: int = Field(3600, ge=900, le=3600)
    dpd_timeout_s: int = Field(30, ge=30)


class Vpn(Strict):
    client_cidr: Cidr = Field(description="address pool for laptops on the client VPN (a /12 to /22)")
    split_tunnel: bool = True
    tunnel: TunnelCrypto = TunnelCrypto()
    psk_ssm_prefix: str = Field(
        "/cluster/vpn/psk", description="SSM SecureString prefix the site gateway reads tunnel keys from"
    )


class NfsExport(Strict):
    path: str = Field(pattern=r"^/")
    mount: str = Field(pattern=r"^/")


class Nfs(Strict):
    site: str
    server: str
    exports: list[NfsExport] = Field(min_length=1)


class Efs(Strict):
    enabled: bool = True
    throughput_mode: Literal["bursting", "elastic"] = Field(
        "elastic", description="provisioned throughput would need a MiB/s figure the spec does not carry"
    )
    mount: str = Field("/mnt/efs", pattern=r"^/")


class S3(Strict):
    buckets: list[DnsLabel] = ["datasets", "results"]
    noncurrent_version_days: int = Field(30, ge=1)


class Storage(Strict):
    efs: Efs = Efs()
    s3: S3 = S3()
    nfs: Nfs | None = None


class NvidiaDriver(Strict):
    branch: int = Field(ge=390, description="driver branch, e.g. 580")
    version: str = Field(
        pattern=r"^\d+\.\d+(\.\d+)?$",
        description="the exact driver release, e.g. 580.178.04: it must exist for the Ubuntu release",
    )
    flavour: Literal["auto", "open", "proprietary"] = Field(
        "auto", description="auto: open kernel modules where every GPU served supports them, else proprietary"
    )


class Software(Strict):
    ubuntu: Literal["20.04", "22.04", "24.04"] = "24.04"
    nvidia_driver: NvidiaDriver
    cuda: str = Field(pattern=r"^\d+\.\d+$")
    containerd: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    nvidia_container_toolkit: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    efa_installer: str = Field(
        "1.47.0", pattern=r"^\d+\.\d+\.\d+$", description="AWS EFA installer, installed where a type has EFA"
    )


class ControlPlane(Strict):
    instance_type: str = "m6i.xlarge"
    count: Literal[1, 3, 5] = 3


class Kubernetes(Strict):
    version: str = Field(pattern=r"^1\.\d+\.\d+$")
    pod_cidr: Cidr = Field(description="flannel's pod network")
    service_cidr: Cidr
    control_plane: ControlPlane = ControlPlane()

    @property
    def minor(self) -> str:
        """``1.31`` for ``1.31.4``: the pkgs.k8s.io repository channel."""
        return ".".join(self.version.split(".")[:2])


class AutoscalerSettings(Strict):
    scan_interval_s: int = Field(10, ge=1)
    idle_threshold_s: int = Field(600, ge=0)
    boot_timeout_s: int = Field(900, ge=60)
    max_scale_in_fraction: float = Field(0.1, gt=0, le=1)
    max_new_nodes_per_loop: int = Field(1000, ge=1)
    priority_cutoff: int = -10
    spare_gpus: int = Field(
        0,
        ge=0,
        description="GPUs kept free for the next jobs, so they start without waiting for a boot (docs/planner.md)",
    )
    image: str | None = Field(
        None,
        description="the autoscaler's image (default: <researchers.registry>/<cluster>/autoscaler:<version>, the lab's "
        "own ECR repository, pushed by `invoke push-autoscaler`)",
    )


class User(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]
    uid: int = Field(ge=1000, le=60000)
    admin: bool = Field(False, description="member of the sudo group on the physical servers")
    ssh_keys: list[
        Annotated[str, Field(pattern=r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp\d+) [A-Za-z0-9+/=]+( .*)?$")]
    ]
    gpu_quota: int | None = Field(
        None,
        ge=0,
        le=100000,
        description="GPUs this researcher's namespace may request (default: researchers.quota.gpus)",
    )


class SshMachineGroup(Strict):
    """A few always-on machines researchers SSH into for ad-hoc work (homes from EFS, reachable over the VPN)."""

    name: DnsLabel
    instance_type: str
    count: int = Field(1, ge=0, le=20)

    @property
    def gpus(self) -> int:
        return catalog.instance_type(self.instance_type).gpus


class PodGateway(Strict):
    """Two small flannel members in the primary region that route the pod network for the VPN and the VPCs."""

    instance_type: str = "t3.small"
    count: int = Field(2, ge=1, le=4, description="one active, the rest standing by for failover")


class TenantQuota(Strict):
    """What one researcher's namespace may hold at once (a ResourceQuota per namespace, provision/tenancy.py)."""

    gpus: int = Field(
        16, ge=0, le=100000, description="requests.nvidia.com/gpu, unless users[].gpu_quota says"
    )
    pods: int = Field(500, ge=1, le=100000, description="pods (running and finished-but-kept)")
    services: int = Field(100, ge=0, le=10000, description="Services (one per multi-node job)")
    cpus: int = Field(
        128, ge=1, le=1000000, description="requests.cpu of the namespace (lab asks 3 CPUs per GPU)"
    )
    memory_gib: int = Field(
        512, ge=1, le=10000000, description="requests.memory of the namespace, GiB (lab asks 12 GiB per GPU)"
    )
    published_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        [6006, 8888], description="ports of the owner's pods a laptop may open (TensorBoard, notebooks)"
    )


class Researchers(Strict):
    """What researchers get: the standard image, their namespaces, registry, volumes and SSH machines."""

    python: str = Field("3.11", pattern=r"^3\.\d+$", description="Python in the standard image")
    base_image: str = Field(
        "nvidia/cuda:{cuda}.0-cudnn-runtime-ubuntu{ubuntu}",
        description="the standard base image; {cuda} and {ubuntu} come from software",
    )
    namespace_prefix: str = Field("u-", pattern=r"^[a-z]([-a-z0-9]*)?$")
    ecr_repository: str = Field("research", pattern=r"^[a-z0-9]+([._/-][a-z0-9]+)*$")
    registry: str | None = Field(
        None, description="e.g. 123456789012.dkr.ecr.us-west-2.amazonaws.com (default: LAB_REGISTRY)"
    )
    tensorboard_image: str | None = Field(
        None,
        description="the image `lab tensorboard` runs; default: the job's own (the lab's standard image, or one "
        "built on it, has tensorboard pinned: from the lab's registry, by digest, nothing else to pull)",
    )
    volumes: list[Literal["home", "datasets", "results"]] = ["home", "datasets", "results"]
    ssh_machines: list[SshMachineGroup] = []
    pod_gateway: PodGateway = PodGateway()
    quota: TenantQuota = TenantQuota()

    def namespace(self, user: str) -> str:
        return f"{self.namespace_prefix}{user}"


class Alerts(Strict):
    """Where every alert goes (docs/operations.md, "Alerts"): one email address or one HTTPS webhook. Prometheus'
    Alertmanager, the CloudWatch alarms, the budget and AWS Backup all publish to the cluster's SNS topics, which
    deliver there."""

    email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = Field(
        None, description="e.g. ops@lab.example.org (SNS asks it to confirm the subscription once per topic)"
    )
    webhook: Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$")] | None = Field(
        None, description="an HTTPS endpoint that accepts SNS notifications (it confirms the subscription)"
    )


class Budget(Strict):
    """A monthly AWS cost budget with notifications on the forecast and on actual spend."""

    monthly_usd: float = Field(gt=0, description="the month's limit in US dollars")
    forecast_alert_percent: list[Annotated[int, Field(ge=1, le=1000)]] = Field(
        [80, 100], description="notify when the month's forecast passes these shares of the limit"
    )
    actual_alert_percent: list[Annotated[int, Field(ge=1, le=1000)]] = Field(
        [100], description="notify when actual spend passes these shares of the limit"
    )


class Backups(Strict):
    """etcd snapshots and their copies in a second region (docs/operations.md, "Backups")."""

    etcd_every_h: int = Field(6, ge=1, le=24, description="hours between etcd snapshots")
    keep_days: int = Field(30, ge=1, le=3650, description="how long snapshots and backups are kept")
    copy_region: str | None = Field(
        None, description="AWS Backup copies EFS and the etcd snapshots here (default: the second region)"
    )


class Operations(Strict):
    """The first month of operations: alerts, budget, backups, idle SSH machines, node drift, certificates."""

    alerts: Alerts | None = None
    budget: Budget | None = None
    backups: Backups = Backups()
    ssh_idle_stop_min: int = Field(
        60,
        ge=0,
        le=10080,
        description="an SSH machine with no session and no GPU use this long stops (0: never)",
    )
    drift_deadline_h: float = Field(
        72, ge=0, description="nodes on an old image or launch template this long after a new one: the operator "
        "is told which jobs hold them (0: never)"
    )  # fmt: skip
    certificate_warn_days: int = Field(
        30, ge=1, le=365, description="alert this long before a certificate expires"
    )


class Cluster(Strict):
    name: DnsLabel
    domain: str = Field("research.internal", pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    kubernetes: Kubernetes
    software: Software
    regions: list[Region] = Field(min_length=1)
    spill_over: list[str] | None = Field(None, description="the order the autoscaler tries regions")
    sites: list[Site] = []
    vpn: Vpn
    storage: Storage = Storage()
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    users: list[User] = []
    researchers: Researchers = Researchers()
    operations: Operations = Operations()

    # -- derived views: every generator reads these rather than re-deriving them -----------------
    @cached_property
    def spill_over_order(self) -> list[str]:
        return list(self.spill_over) if self.spill_over else [r.name for r in self.regions]

    @property
    def primary_region(self) -> str:
        """The region that hosts the control plane: the first in spill-over order."""
        return self.spill_over_order[0]

    @property
    def backup_copy_region(self) -> str | None:
        """Where AWS Backup copies the primary region's backups: the spec's, else the second region."""
        order = self.spill_over_order
        return self.operations.backups.copy_region or (order[1] if len(order) > 1 else None)

    def region(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        known = ", ".join(r.name for r in self.regions)
        raise KeyError(f"region {name!r} is not in the spec (regions: {known})")

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sites) or "none"
        raise KeyError(f"site {name!r} is not in the spec (sites: {known})")

    def asg_name(self, region: str, group: NodeGroup | str) -> str:
        """The Auto Scaling group's name, which is also the autoscaler's group name."""
        name = group if isinstance(group, str) else group.name
        return f"{self.name}-{region}-{name}"

    def cloud_gpu_models(self) -> set[str]:
        types = catalog.instance_types()
        return {
            types[t].gpu_model
            for r in self.regions
            for g in r.node_groups
            for t in g.instance_types
            if t in types and types[t].gpu_model
        }

    def site_gpu_models(self, site: str | None = None) -> set[str]:
        sites = [self.site(site)] if site else self.sites
        return {s.gpu_model for st in sites for s in st.servers if s.gpu_model}
