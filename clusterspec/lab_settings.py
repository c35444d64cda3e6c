"""What ``lab`` needs to know about the cluster, as the cluster itself publishes it: the ConfigMap
``kube-public/research-lab-settings`` (``names.LAB_SETTINGS_*``), key ``settings.yaml``.

``invoke up`` and ``invoke add-user`` write it from the spec and Terraform's outputs (provision/lab_settings.py);
``lab`` reads it with the researcher's own kubeconfig, so a researcher installs only the small ``lab`` package and
never needs this repository or ``cluster.yaml`` (docs/researchers.md). Nothing secret is in it: image and bucket
names, node shapes, the users' uids and the SSH machines' names.

:func:`from_spec` builds the data (the operator's side, which has the spec); :func:`parse` reads it back on the
researcher's side and refuses a document it does not understand with one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clusterspec import catalog, standard_image
from clusterspec.scheduler import GANG_SCHEDULER

if TYPE_CHECKING:
    from clusterspec.spec import Cluster

VERSION = 1


@dataclass(frozen=True)
class NodeType:
    """A kind of GPU node a job can land on: a cloud node group (``kind: group``, ``name`` its Auto Scaling group,
    the nodes' ``research.cluster/node-group`` label) or a physical server (``kind: server``, ``name`` the node)."""

    where: str  # region or site
    kind: str  # group | server
    name: str
    gpus: int
    gpu_model: str | None
    instance_types: tuple[str, ...] = ()
    spot: bool = False
    efa: int = 0  # vpc.amazonaws.com/efa devices per node (0: none)
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)


@dataclass(frozen=True)
class LabSettings:
    cluster: str
    domain: str
    namespace_prefix: str
    python: str
    base_image: str
    standard_image: str
    standard_packages: dict[str, str]
    registry: str | None
    repository: str  # <cluster>/<ecr_repository>: images built from a job's requirements
    code_bucket: str | None  # where `lab` uploads code snapshots (the results bucket; <user>/.lab/code/...)
    code_region: str | None
    s3_endpoint: str | None  # only for a local cluster (a moto server); empty on AWS
    tensorboard_image: str | None  # None: the job's own image
    volumes: tuple[str, ...]
    gang_scheduler: str
    regions: tuple[str, ...]
    sites: tuple[str, ...]
    node_types: tuple[NodeType, ...]
    users: dict[str, int]
    ssh_machines: tuple[tuple[str, str], ...]  # (alias, DNS name)
    efa_env: dict[str, str] = field(default_factory=dict)
    ssh_idle_stop_min: int = 0  # the SSH machines stop after this many idle minutes (0: never; issue 29)

    @property
    def places(self) -> list[str]:
        return [*self.regions, *self.sites]

    def namespace(self, user: str) -> str:
        return f"{self.namespace_prefix}{user}"


def _node_types(cluster: Cluster) -> list[dict]:
    out = []
    for r in cluster.regions:
        for g in r.node_groups:
            if not g.gpus:
                continue
            types = catalog.instance_types()
            out.append({
                "where": r.name, "kind": "group", "name": cluster.asg_name(r.name, g), "gpus": g.gpus,
                "gpu_model": g.gpu_model, "instance_types": list(g.instance_types), "spot": g.spot,
                # the group's nodes get the interfaces every one of its types has (provision/terraform/context.py)
                "efa": min(types[t].efa for t in g.instance_types),
                "taints": [[t.key, t.value, t.effect] for t in g.taints],
            })  # fmt: skip
    for s in cluster.sites:
        for srv in s.servers:
            if srv.gpus:
                out.append({"where": s.name, "kind": "server", "name": srv.name, "gpus": srv.gpus,
                            "gpu_model": srv.gpu_model, "instance_types": [], "spot": False, "efa": 0,
                            "taints": [[t.key, t.value, t.effect] for t in srv.taints]})  # fmt: skip
    return out


def from_spec(cluster: Cluster, *, registry: str | None = None, code_bucket: str | None = None,
              s3_endpoint: str | None = None) -> dict:  # fmt: skip
    """The settings document for ``cluster``. ``registry`` (Terraform output ``registry_host``) and ``code_bucket``
    (the results bucket, Terraform output ``bucket_names.results``) fill what the spec does not know."""
    rs = cluster.researchers
    sw = cluster.software
    registry = registry or rs.registry
    primary = cluster.primary_region
    users = {u.name: u.uid for u in cluster.users}
    ssh = [(f"{cluster.name}-{g.name}-{i}", f"{g.name}-{i}.ssh.{cluster.domain}")
           for g in rs.ssh_machines for i in range(1, g.count + 1)]  # fmt: skip
    return {
        "version": VERSION,
        "cluster": cluster.name,
        "domain": cluster.domain,
        "namespace_prefix": rs.namespace_prefix,
        "python": rs.python,
        "base_image": rs.base_image.format(cuda=sw.cuda, ubuntu=sw.ubuntu),
        "standard_image": standard_image.reference(registry, cluster.name, sw.cuda, rs.python),
        "standard_packages": standard_image.packages(),
        "registry": registry,
        "repository": f"{cluster.name}/{rs.ecr_repository}",
        "code_bucket": code_bucket,
        "code_region": primary,
        "s3_endpoint": s3_endpoint,
        "tensorboard_image": rs.tensorboard_image,
        "volumes": list(rs.volumes),
        "gang_scheduler": GANG_SCHEDULER,
        "regions": list(cluster.spill_over_order),
        "sites": [s.name for s in cluster.sites],
        "node_types": _node_types(cluster),
        "users": users,
        "ssh_machines": [list(x) for x in ssh],
        "efa_env": standard_image.efa_env(),
        "ssh_idle_stop_min": cluster.operations.ssh_idle_stop_min or 0,
    }


class SettingsError(ValueError):
    """A settings document ``lab`` cannot use: the message names the field."""


def _need(data: dict, key: str, kind, where: str = ""):
    if key not in data:
        raise SettingsError(f"{where}{key}: missing")
    value = data[key]
    if value is not None and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise SettingsError(f"{where}{key}: {type(value).__name__} {value!r}, expected {names}")
    return value


def parse(data) -> LabSettings:
    """The settings ``lab`` works with; a document it does not understand is one SettingsError."""
    if not isinstance(data, dict):
        raise SettingsError(f"the document is a {type(data).__name__}, expected a mapping")
    version = _need(data, "version", int)
    if version != VERSION:
        raise SettingsError(
            f"version: {version}; this lab reads version {VERSION} (pip install -U the lab client)"
        )
    types = []
    for i, t in enumerate(_need(data, "node_types", list) or ()):
        at = f"node_types[{i}]."
        if not isinstance(t, dict):
            raise SettingsError(f"node_types[{i}]: expected a mapping")
        kind = _need(t, "kind", str, at)
        if kind not in ("group", "server"):
            raise SettingsError(f"{at}kind: {kind!r}, expected group or server")
        types.append(NodeType(
            where=_need(t, "where", str, at), kind=kind, name=_need(t, "name", str, at),
            gpus=_need(t, "gpus", int, at), gpu_model=_need(t, "gpu_model", str, at),
            instance_types=tuple(_need(t, "instance_types", list, at) or ()), spot=bool(_need(t, "spot", bool, at)),
            efa=_need(t, "efa", int, at) or 0,
            taints=tuple(tuple(str(x) for x in tt) for tt in (_need(t, "taints", list, at) or ())),
        ))  # fmt: skip
    users = _need(data, "users", dict) or {}
    for name, uid in users.items():
        if not isinstance(uid, int):
            raise SettingsError(f"users.{name}: {uid!r}, expected a uid (integer)")
    return LabSettings(
        cluster=_need(data, "cluster", str), domain=_need(data, "domain", str),
        namespace_prefix=_need(data, "namespace_prefix", str), python=_need(data, "python", str),
        base_image=_need(data, "base_image", str), standard_image=_need(data, "standard_image", str),
        standard_packages={str(k): str(v) for k, v in (_need(data, "standard_packages", dict) or {}).items()},
        registry=_need(data, "registry", str), repository=_need(data, "repository", str),
        code_bucket=_need(data, "code_bucket", str), code_region=_need(data, "code_region", str),
        s3_endpoint=_need(data, "s3_endpoint", str), tensorboard_image=_need(data, "tensorboard_image", str),
        volumes=tuple(_need(data, "volumes", list) or ()), gang_scheduler=_need(data, "gang_scheduler", str),
        regions=tuple(_need(data, "regions", list) or ()), sites=tuple(_need(data, "sites", list) or ()),
        node_types=tuple(types), users=dict(users),
        ssh_machines=tuple((str(a), str(h)) for a, h in (_need(data, "ssh_machines", list) or ())),
        efa_env={str(k): str(v) for k, v in (_need(data, "efa_env", dict) or {}).items()},
        # optional: a cluster that published its settings before issue 29 names no idle stop
        ssh_idle_stop_min=(_need(data, "ssh_idle_stop_min", int) or 0) if "ssh_idle_stop_min" in data else 0,
    )  # fmt: skip
