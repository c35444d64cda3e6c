"""Rules that relate several fields of the spec. Each returns ``(field path, message)`` pairs."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from functools import cache

import botocore.session

from clusterspec import addresses, catalog, drivers
from clusterspec.k8s_names import label_key_problem, label_value_problem
from clusterspec.spec import Cluster, Taint

Problem = tuple[str, str]


@cache
def aws_regions() -> frozenset[str]:
    """Regions that offer EC2, from botocore's bundled endpoint data (no network)."""
    return frozenset(botocore.session.get_session().get_available_regions("ec2"))


def check(cluster: Cluster) -> list[Problem]:
    out: list[Problem] = []
    for rule in (
        _networks,
        _names,
        _regions,
        _node_groups,
        _sites,
        _labels,
        _drivers,
        _versions,
        _storage,
        _vpn,
        _operations,
    ):
        out.extend(rule(cluster))
    return out


def _all_networks(c: Cluster) -> list[tuple[str, str, str]]:
    """``(path, cidr, what)`` for every network that must not overlap another."""
    nets = [(f"regions[{i}].cidr", r.cidr, r.name) for i, r in enumerate(c.regions)]
    nets += [(f"sites[{i}].cidr", s.cidr, s.name) for i, s in enumerate(c.sites)]
    nets.append(("vpn.client_cidr", c.vpn.client_cidr, "VPN clients"))
    nets.append(("kubernetes.pod_cidr", c.kubernetes.pod_cidr, "pods"))
    nets.append(("kubernetes.service_cidr", c.kubernetes.service_cidr, "services"))
    return nets


def _networks(c: Cluster) -> Iterator[Problem]:
    nets = _all_networks(c)
    for j, (path, cidr, _) in enumerate(nets):
        for other_path, other, what in nets[:j]:
            if ipaddress.ip_network(cidr).overlaps(ipaddress.ip_network(other)):
                yield path, f"{cidr} overlaps {other_path} {other} ({what})"
    for i, r in enumerate(c.regions):
        prefix = ipaddress.ip_network(r.cidr).prefixlen
        if not 16 <= prefix <= 24:
            yield (
                f"regions[{i}].cidr",
                f"{r.cidr}: a VPC must be a /16 to a /24 (AWS allows /16 at the largest)",
            )
        if len(r.zones) > addresses.MAX_ZONES:
            yield (
                f"regions[{i}].zones",
                f"{len(r.zones)} zones; the address plan has room for {addresses.MAX_ZONES}",
            )
    prefix = ipaddress.ip_network(c.vpn.client_cidr).prefixlen
    if not 12 <= prefix <= 22:
        yield "vpn.client_cidr", f"{c.vpn.client_cidr}: AWS Client VPN needs a /12 to a /22"


def _duplicates(items: list[str], path: str) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for i, name in enumerate(items):
        if name in seen:
            yield path.format(i=i), f"duplicate name {name!r} (also at index {seen[name]})"
        seen.setdefault(name, i)


def _names(c: Cluster) -> Iterator[Problem]:
    yield from _duplicates([r.name for r in c.regions], "regions[{i}].name")
    for ri, r in enumerate(c.regions):
        yield from _duplicates([g.name for g in r.node_groups], f"regions[{ri}].node_groups[{{i}}].name")
    yield from _duplicates([s.name for s in c.sites], "sites[{i}].name")
    servers = [(si, s) for si, st in enumerate(c.sites) for s in st.servers]
    yield from _duplicates([s.name for _, s in servers], "servers[{i}].name")
    yield from _duplicates([u.name for u in c.users], "users[{i}].name")
    yield from _duplicates([str(u.uid) for u in c.users], "users[{i}].uid")
    for i, r in enumerate(c.regions):
        for g in r.node_groups:
            if len(c.asg_name(r.name, g)) > 255:
                yield (
                    f"regions[{i}].node_groups",
                    f"Auto Scaling group name {c.asg_name(r.name, g)!r} is too long",
                )


def _regions(c: Cluster) -> Iterator[Problem]:
    known = aws_regions()
    names = [r.name for r in c.regions]
    for i, r in enumerate(c.regions):
        if r.name not in known:
            yield (
                f"regions[{i}].name",
                f"unknown AWS region {r.name!r} (e.g. us-west-2, us-east-1, eu-west-1)",
            )
            continue
        real = catalog.zones().get(r.name)
        for j, z in enumerate(r.zones):
            if not re.fullmatch(re.escape(r.name) + r"[a-z]", z):
                yield (
                    f"regions[{i}].zones[{j}]",
                    f"{z!r} is not an availability zone of {r.name} (e.g. {r.name}a)",
                )
            elif real is not None and z not in real:
                yield (
                    f"regions[{i}].zones[{j}]",
                    f"{r.name} has no zone {z!r}; its zones are {', '.join(real)} (clusterspec/data/zones.yaml)",
                )
    if c.spill_over is not None:
        for i, name in enumerate(c.spill_over):
            if name not in names:
                yield f"spill_over[{i}]", f"unknown region {name!r}; regions are: {', '.join(names)}"
        yield from _duplicates(c.spill_over, "spill_over[{i}]")
        missing = [n for n in names if n not in c.spill_over]
        if missing:
            yield "spill_over", f"does not list region(s) {', '.join(missing)}; list every region once"
    cp = c.kubernetes.control_plane.instance_type
    if cp not in catalog.instance_types():
        yield "kubernetes.control_plane.instance_type", f"unknown instance type {cp!r}"


def _node_groups(c: Cluster) -> Iterator[Problem]:
    types = catalog.instance_types()
    for ri, r in enumerate(c.regions):
        for gi, g in enumerate(r.node_groups):
            p = f"regions[{ri}].node_groups[{gi}]"
            if g.min > g.max:
                yield f"{p}.min", f"min {g.min} is greater than max {g.max}"
            if g.warm_pool > g.max:
                yield f"{p}.warm_pool", f"warm pool {g.warm_pool} is greater than max {g.max}"
            if len(g.instance_types) > 1 and not g.spot:
                yield (
                    f"{p}.instance_types",
                    "several instance types need spot: true (a mixed-instances policy)",
                )
            for ti, t in enumerate(g.instance_types):
                if t not in types:
                    yield f"{p}.instance_types[{ti}]", f"unknown instance type {t!r} ({_similar(t, types)})"
                elif not types[t].offered_in(r.name):
                    yield f"{p}.instance_types[{ti}]", f"{t} is not offered in {r.name}"
            known = [t for t in g.instance_types if t in types]
            shapes = {(types[t].gpus, types[t].gpu_model) for t in known}
            if len(shapes) > 1:
                yield (
                    f"{p}.instance_types",
                    "instance types of one group must have the same GPUs (count and model)",
                )


def _similar(name: str, types: dict) -> str:
    family = name.split(".", 1)[0]
    same = [t for t in types if t.split(".", 1)[0] == family]
    return "known sizes: " + ", ".join(same) if same else "see clusterspec/data/instance_types.yaml"


_NON_PUBLIC = [
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "0.0.0.0/8",
    )
]


def _sites(c: Cluster) -> Iterator[Problem]:
    models = catalog.gpu_models()
    for si, s in enumerate(c.sites):
        net = ipaddress.ip_network(s.cidr)
        if ipaddress.ip_address(s.gateway.private_ip) not in net:
            yield (
                f"sites[{si}].gateway.private_ip",
                f"{s.gateway.private_ip} is not in the site's network {s.cidr}",
            )
        if any(ipaddress.ip_address(s.gateway.public_ip) in n for n in _NON_PUBLIC):
            yield (
                f"sites[{si}].gateway.public_ip",
                f"{s.gateway.public_ip} is a private address; AWS needs the public one",
            )
        for vi, v in enumerate(s.servers):
            p = f"sites[{si}].servers[{vi}]"
            if ipaddress.ip_address(v.ip) not in net:
                yield f"{p}.ip", f"{v.ip} is not in the site's network {s.cidr}"
            if v.gpus and not v.gpu_model:
                yield f"{p}.gpu_model", f"{v.gpus} GPUs need a gpu_model (one of {', '.join(models)})"
            if v.gpu_model and v.gpu_model not in models:
                yield f"{p}.gpu_model", f"unknown GPU model {v.gpu_model!r} (one of {', '.join(models)})"
        if sum("gateway" in v.roles for v in s.servers) > 1:
            yield f"sites[{si}].servers", "more than one server has the gateway role"


def _taint_problems(taints: list[Taint], path: str) -> Iterator[Problem]:
    for ti, t in enumerate(taints):
        if problem := label_key_problem(t.key):
            yield f"{path}[{ti}].key", f"taint key {t.key!r}: {problem}"
        if problem := label_value_problem(t.value):
            yield f"{path}[{ti}].value", f"taint value {t.value!r}: {problem}"


def _label_problems(labels: dict[str, str], path: str) -> Iterator[Problem]:
    for k, v in labels.items():
        if problem := label_key_problem(k):
            yield f"{path}.{k}", f"label key {k!r}: {problem}"
        elif problem := label_value_problem(v):
            yield f"{path}.{k}", f"label value {v!r}: {problem}"


def _labels(c: Cluster) -> Iterator[Problem]:
    for ri, r in enumerate(c.regions):
        for gi, g in enumerate(r.node_groups):
            yield from _label_problems(g.labels, f"regions[{ri}].node_groups[{gi}].labels")
            yield from _taint_problems(g.taints, f"regions[{ri}].node_groups[{gi}].taints")
    for si, s in enumerate(c.sites):
        for vi, v in enumerate(s.servers):
            yield from _label_problems(v.labels, f"sites[{si}].servers[{vi}].labels")
            yield from _taint_problems(v.taints, f"sites[{si}].servers[{vi}].taints")


def _drivers(c: Cluster) -> Iterator[Problem]:
    sw = c.software
    known = set(catalog.gpu_models())
    for what, models in (
        ("cloud node groups", c.cloud_gpu_models()),
        ("physical servers", c.site_gpu_models()),
    ):
        models = models & known
        try:
            drivers.select_driver(sw.nvidia_driver.branch, sw.nvidia_driver.flavour, models)
        except ValueError as e:
            yield "software.nvidia_driver", f"{e} (GPUs of the {what})"
        try:
            drivers.check_cuda(sw.cuda, sw.nvidia_driver.branch, models)
        except ValueError as e:
            yield "software.cuda", f"{e} (GPUs of the {what})"


def _versions(c: Cluster) -> Iterator[Problem]:
    """Versions that exist and are supported: the driver release for the Ubuntu release, the toolkit with the
    container-escape fix, containerd 2, a maintained Kubernetes minor (clusterspec/data/gpu_stack.yaml)."""
    sw = c.software
    checks = (
        ("software.nvidia_driver.version", drivers.check_driver_version,
         (sw.ubuntu, sw.nvidia_driver.branch, sw.nvidia_driver.version)),
        ("software.nvidia_container_toolkit", drivers.check_toolkit, (sw.nvidia_container_toolkit,)),
        ("software.containerd", drivers.check_containerd, (sw.containerd,)),
        ("kubernetes.version", drivers.check_kubernetes, (c.kubernetes.version,)),
    )  # fmt: skip
    for path, rule, args in checks:
        try:
            rule(*args)
        except ValueError as e:
            yield path, str(e)


def _storage(c: Cluster) -> Iterator[Problem]:
    nfs = c.storage.nfs
    if nfs is None:
        return
    try:
        site = c.site(nfs.site)
    except KeyError as e:
        yield "storage.nfs.site", str(e.args[0])
        return
    if nfs.server not in {v.name for v in site.servers}:
        names = ", ".join(v.name for v in site.servers)
        yield "storage.nfs.server", f"{nfs.server!r} is not a server of site {site.name} ({names})"
    yield from _duplicates([e.mount for e in nfs.exports], "storage.nfs.exports[{i}].mount")


def _vpn(c: Cluster) -> Iterator[Problem]:
    t = c.vpn.tunnel
    gcm = [e for e in t.ike_encryption + t.esp_encryption if "GCM" in e]
    if gcm and t.esp_integrity and all("GCM" in e for e in t.esp_encryption):
        yield "vpn.tunnel.esp_integrity", "GCM ciphers carry their own integrity; leave esp_integrity empty"


def _operations(c: Cluster) -> Iterator[Problem]:
    ops = c.operations
    if ops.alerts is not None and (ops.alerts.email is None) == (ops.alerts.webhook is None):
        yield "operations.alerts", "give exactly one of email or webhook (the one place every alert goes)"
    if ops.budget is not None:
        n = len(ops.budget.forecast_alert_percent) + len(ops.budget.actual_alert_percent)
        if n > 10:
            yield (
                "operations.budget",
                f"{n} notifications; an AWS budget has at most 10 (forecast and actual together)",
            )
        for what in ("forecast_alert_percent", "actual_alert_percent"):
            yield from _duplicates(
                [str(v) for v in getattr(ops.budget, what)], f"operations.budget.{what}[{{i}}]"
            )
    copy = ops.backups.copy_region
    if copy is not None:
        if copy not in aws_regions():
            yield "operations.backups.copy_region", f"unknown AWS region {copy!r} (e.g. us-east-1)"
        elif copy == c.primary_region:
            yield (
                "operations.backups.copy_region",
                f"{copy} is the primary region; copies must go to another region (e.g. {c.spill_over_order[-1]})"
                if len(c.spill_over_order) > 1
                else f"{copy} is the primary region; copies must go to another region (e.g. us-east-1)",
            )
    elif len(c.spill_over_order) < 2:
        yield "operations.backups.copy_region", "is required with one region: name where backups are copied"
