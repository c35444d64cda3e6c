"""What ``lab`` reads from the cluster spec: the standard image, node shapes, regions, tolerations, registry."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from clusterspec.errors import SpecError
from clusterspec.loader import load_spec
from clusterspec.spec import Cluster
from labctl.errors import LabError


@dataclass(frozen=True)
class NodeShape:
    where: str  # region or site name
    group: str  # node group or server name
    gpus: int


class Settings:
    def __init__(self, spec: Cluster) -> None:
        self.spec = spec

    @classmethod
    def load(cls, path: str | None = None) -> Settings:
        try:
            return cls(load_spec(path or os.environ.get("LAB_SPEC") or None))
        except SpecError as e:
            raise LabError(e.lines[0]) from None

    # --- image ---------------------------------------------------------------------------------------
    @property
    def base_image(self) -> str:
        sw = self.spec.software
        return self.spec.researchers.base_image.format(cuda=sw.cuda, ubuntu=sw.ubuntu)

    @property
    def python(self) -> str:
        return self.spec.researchers.python

    def registry(self, region: str | None = None) -> str | None:
        """The registry host images are pushed to and pulled from (``LAB_REGISTRY`` wins over the spec).

        ECR replicates the primary region's repository to the others; ``region`` names the replica to pull
        from (its host differs only in the region part)."""
        host = os.environ.get("LAB_REGISTRY") or self.spec.researchers.registry
        if host and region and ".ecr." in host:
            prefix, _, rest = host.partition(".ecr.")
            host = f"{prefix}.ecr.{region}.{rest.split('.', 1)[1]}"
        return host

    def image_ref(self, digest: str, region: str | None = None) -> str:
        repo = f"{self.spec.name}/{self.spec.researchers.ecr_repository}"
        host = self.registry(region)
        return f"{host}/{repo}:{digest}" if host else f"{repo}:{digest}"

    # --- where jobs can run --------------------------------------------------------------------------
    @cached_property
    def gpu_shapes(self) -> list[NodeShape]:
        shapes = [
            NodeShape(r.name, g.name, g.gpus) for r in self.spec.regions for g in r.node_groups if g.gpus > 0
        ]
        shapes += [
            NodeShape(s.name, srv.name, srv.gpus) for s in self.spec.sites for srv in s.servers if srv.gpus
        ]
        return shapes

    @property
    def places(self) -> list[str]:
        return [r.name for r in self.spec.regions] + [s.name for s in self.spec.sites]

    def max_gpus_per_node(self, places: list[str] | None = None) -> int:
        return max((s.gpus for s in self.gpu_shapes if not places or s.where in places), default=0)

    def gpu_tolerations(self) -> list[dict]:
        """The taints of the on-demand GPU groups and GPU servers, tolerated (spot groups stay opt-in)."""
        seen: dict[tuple, dict] = {}
        taints = [
            t for r in self.spec.regions for g in r.node_groups if g.gpus and not g.spot for t in g.taints
        ]
        taints += [t for s in self.spec.sites for srv in s.servers if srv.gpus for t in srv.taints]
        for t in taints:
            tol = {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
            if not t.value:
                tol = {"key": t.key, "operator": "Exists", "effect": t.effect}
            seen.setdefault((t.key, t.value, t.effect), tol)
        return list(seen.values())

    def uid(self, user: str) -> int | None:
        return next((u.uid for u in self.spec.users if u.name == user), None)

    def namespace(self, user: str) -> str:
        return self.spec.researchers.namespace(user)
