"""Karpenter's configuration from the spec: the kwok provider's instance types and the NodePools per GPU type."""

from __future__ import annotations

import pytest

from clusterspec import catalog
from clusterspec.loader import load_spec
from demos.bench_peers import karpenter_config as kc
from tests.support import ROOT


@pytest.fixture(scope="module")
def spec():
    return load_spec(str(ROOT / "cluster.yaml"))


def _offerings(types: list[dict], name: str) -> dict[tuple[str, str], float]:
    row = next(t for t in types if t["name"] == name)
    out = {}
    for o in row["offerings"]:
        req = {r["key"]: r["values"][0] for r in o["Requirements"]}
        out[(req[kc.ZONE], req[kc.CAPACITY_TYPE])] = o["Price"]
    return out


def test_every_type_of_the_spec_is_offered_in_every_zone_of_every_region_at_its_price(spec) -> None:
    types = kc.instance_types(spec)
    names = {t["name"] for t in types}
    assert names == {it for r in spec.regions for g in r.node_groups for it in g.instance_types}
    offers = _offerings(types, "p3.16xlarge")
    assert len(offers) == sum(len(r.zones) for r in spec.regions)  # 3 + 4 + 3 zones, on-demand only
    assert offers[("us-east-1d", "on-demand")] == catalog.instance_type("p3.16xlarge").price["us-east-1"]
    assert {ct for _, ct in _offerings(types, "g5.12xlarge")} == {"spot"}  # the spot group's types


def test_resources_carry_the_gpus_and_the_catalog_size(spec) -> None:
    p4d = next(t for t in kc.instance_types(spec) if t["name"] == "p4d.24xlarge")
    assert p4d["resources"]["nvidia.com/gpu"] == "8"
    assert p4d["resources"]["cpu"] == "96"
    assert p4d["resources"]["memory"] == f"{1152 * 1024}Mi"
    cpu = next(t for t in kc.instance_types(spec) if t["name"] == "m6i.2xlarge")
    assert "nvidia.com/gpu" not in cpu["resources"]


def test_a_region_missing_from_the_price_table_offers_nothing_there(spec) -> None:
    """p3dn is priced in us-west-2 and us-east-1 only: an offering in us-east-2 would be bought at $0."""
    groups = [
        g.model_copy(update={"instance_types": ["p3dn.24xlarge"]}) for g in spec.regions[0].node_groups[2:3]
    ]
    regions = [r.model_copy(update={"node_groups": groups}) for r in spec.regions]
    offers = _offerings(kc.instance_types(spec.model_copy(update={"regions": regions})), "p3dn.24xlarge")
    assert {z for z, _ in offers} == set(spec.region("us-west-2").zones) | set(spec.region("us-east-1").zones)


def test_one_pool_per_group_over_one_regions_zones_or_all(spec) -> None:
    pools = {p["metadata"]["name"]: p for p in kc.node_pools(spec, ["us-west-2"], 30)}
    assert set(pools) == {g.name for g in spec.region("us-west-2").node_groups}
    v100 = pools["gpu-v100x8"]["spec"]
    reqs = {r["key"]: r["values"] for r in v100["template"]["spec"]["requirements"]}
    assert reqs[kc.INSTANCE_TYPE] == ["p3.16xlarge"]
    assert reqs[kc.ZONE] == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert reqs[kc.CAPACITY_TYPE] == ["on-demand"]
    assert v100["limits"]["nvidia.com/gpu"] == str(100 * 8)
    assert v100["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert v100["disruption"]["consolidateAfter"] == "30s"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in v100["template"]["spec"][
        "taints"
    ]
    assert v100["template"]["metadata"]["labels"]["research.cluster/gpu-model"] == "v100"
    # our priority order as Karpenter's weights: t4 before v100 before a100 before spot
    weights = {n: p["spec"]["weight"] for n, p in pools.items()}
    assert weights["gpu-t4"] > weights["gpu-v100x8"] > weights["gpu-a100x8"] > weights["gpu-a10g-spot"] >= 1
    ideal = {p["metadata"]["name"]: p for p in kc.node_pools(spec, spec.spill_over_order, 30)}
    zones = next(
        r for r in ideal["gpu-v100x8"]["spec"]["template"]["spec"]["requirements"] if r["key"] == kc.ZONE
    )
    assert len(zones["values"]) == 10
    assert ideal["gpu-v100x8"]["spec"]["limits"]["nvidia.com/gpu"] == str(3 * 100 * 8)


def test_capacity_limits_in_the_moto_servers_syntax() -> None:
    assert kc.capacity_limits({("us-west-2", "p4d.24xlarge"): 0, ("us-west-2", "p3.16xlarge"): 2}) == (
        "us-west-2/p3.16xlarge=2,us-west-2/p4d.24xlarge=0"
    )
