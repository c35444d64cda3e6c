"""What ``lab`` knows about the cluster: the settings the cluster publishes (clusterspec/lab_settings.py).

They are read from the ConfigMap ``kube-public/research-lab-settings`` with the researcher's own kubeconfig (``invoke
up`` and ``invoke add-user`` write it), so ``lab`` needs neither this repository nor ``cluster.yaml``. ``--settings
FILE`` (or ``LAB_SETTINGS``) reads the same document from a file instead: a copy kept for working offline, or a
cluster whose settings are not published yet (``invoke lab-settings --out FILE`` writes one).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import yaml

from clusterspec.lab_settings import LabSettings, NodeType, SettingsError, parse
from clusterspec.names import LAB_SETTINGS_CONFIGMAP, LAB_SETTINGS_NAMESPACE
from labctl.errors import LabError

WHERE = f"ConfigMap {LAB_SETTINGS_NAMESPACE}/{LAB_SETTINGS_CONFIGMAP}"


class Settings:
    def __init__(self, data: LabSettings, source: str = WHERE) -> None:
        self.data = data
        self.source = source

    # --- loading -------------------------------------------------------------------------------------------------
    @classmethod
    def from_text(cls, text: str, source: str) -> Settings:
        try:
            return cls(parse(yaml.safe_load(text)), source)
        except yaml.YAMLError as e:
            raise LabError(f"{source}: not YAML ({str(e).splitlines()[0]})") from None
        except SettingsError as e:
            raise LabError(f"{source}: {e}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> Settings:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise LabError(
                f"{p}: {e.strerror}; give the file `invoke lab-settings --out FILE` wrote"
            ) from None
        return cls.from_text(text, str(p))

    @classmethod
    def load(cls, kube=None, path: str | None = None) -> Settings:
        """From ``path`` (or ``LAB_SETTINGS``) when given, else from the cluster through ``kube``."""
        path = path or os.environ.get("LAB_SETTINGS") or None
        if path:
            return cls.from_file(path)
        if kube is None:
            raise LabError("no cluster settings: give --settings FILE, or a kubeconfig for the cluster")
        return cls.from_text(kube.settings_text(), WHERE)

    # --- images ----------------------------------------------------------------------------------------------------
    @property
    def base_image(self) -> str:
        return self.data.base_image

    @property
    def standard_image(self) -> str:
        return self.data.standard_image

    @property
    def python(self) -> str:
        return self.data.python

    def registry(self, region: str | None = None) -> str | None:
        """The registry host images are pushed to and pulled from (``LAB_REGISTRY`` wins over the settings).

        ECR replicates the primary region's repository to the others; ``region`` names the replica to pull
        from (its host differs only in the region part)."""
        host = os.environ.get("LAB_REGISTRY") or self.data.registry
        if host and region and ".ecr." in host:
            prefix, _, rest = host.partition(".ecr.")
            host = f"{prefix}.ecr.{region}.{rest.split('.', 1)[1]}"
        return host

    def image_ref(self, tag: str, region: str | None = None) -> str:
        host = self.registry(region)
        return f"{host}/{self.data.repository}:{tag}" if host else f"{self.data.repository}:{tag}"

    def standard_ref(self, region: str | None = None) -> str:
        """The standard image, from the region's registry replica when the job is pinned to a region."""
        ref = self.data.standard_image
        own = self.data.registry
        if own and ref.startswith(own + "/"):
            return f"{self.registry(region)}/{ref[len(own) + 1 :]}"
        return ref

    # --- where jobs can run ------------------------------------------------------------------------------------------
    @property
    def node_types(self) -> tuple[NodeType, ...]:
        return self.data.node_types

    @property
    def places(self) -> list[str]:
        return self.data.places

    @property
    def regions(self) -> tuple[str, ...]:
        return self.data.regions

    def gpu_models(self) -> list[str]:
        return sorted({t.gpu_model for t in self.node_types if t.gpu_model})

    def max_gpus_per_node(self, places: list[str] | None = None) -> int:
        return max((t.gpus for t in self.node_types if not places or t.where in places), default=0)

    def uid(self, user: str) -> int | None:
        return self.data.users.get(user)

    def namespace(self, user: str) -> str:
        return self.data.namespace(user)

    @property
    def namespace_prefix(self) -> str:
        return self.data.namespace_prefix

    @property
    def volumes(self) -> tuple[str, ...]:
        return self.data.volumes

    @property
    def gang_scheduler(self) -> str:
        return self.data.gang_scheduler

    @property
    def efa_env(self) -> dict[str, str]:
        return dict(self.data.efa_env)

    @property
    def tensorboard_image(self) -> str | None:
        return self.data.tensorboard_image

    def with_data(self, **changes) -> Settings:
        return Settings(replace(self.data, **changes), self.source)


def gpu_type_key(name: str) -> str:
    """``A100``, ``a100``, ``Titan X``, ``titan-x-pascal`` compared without case, spaces, dashes or underscores."""
    return re.sub(r"[-_ ]+", "", name).lower()
