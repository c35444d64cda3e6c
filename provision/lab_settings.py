"""The cluster's settings for ``lab`` (clusterspec/lab_settings.py), published in the cluster: the ConfigMap
``kube-public/research-lab-settings`` and a Role and RoleBinding that let every researcher listed in the spec (each
by name, the CN of their client certificate) read that one ConfigMap and nothing else there. Not the group
``research:users`` (their certificates' O): a certificate cannot be revoked, so a removed researcher keeps their
group for as long as it lasts; the binding names the spec's users, and ``invoke remove-user`` rewrites it without
the one removed (issue 36).

Written by ``invoke lab-settings``, by ``invoke up`` once the API answers and by ``invoke add-user`` (a new user's uid
must be in it before their first job), with what Terraform knows: the results bucket (global root output
``bucket_names``, where code snapshots go) and the registry (``researchers.registry`` in the spec, or
``--registry``). Re-applied whole each time (the same spec gives the same document).
"""

from __future__ import annotations

import yaml

from clusterspec import lab_settings
from clusterspec.names import LAB_SETTINGS_CONFIGMAP, LAB_SETTINGS_KEY, LAB_SETTINGS_NAMESPACE
from clusterspec.spec import Cluster

READER = "research-lab-settings-reader"
LABELS = {"app.kubernetes.io/managed-by": "research-cluster", "app.kubernetes.io/part-of": "lab"}


def results_bucket(cluster: Cluster) -> str | None:
    """The results bucket from the global root's outputs, when it has been applied."""
    from clusterspec.errors import UserError
    from provision.terraform.outputs import global_output

    try:
        return (global_output("bucket_names") or {}).get("results")
    except UserError:
        return None


def document(cluster: Cluster, registry: str | None = None, code_bucket: str | None = None,
             s3_endpoint: str | None = None) -> str:  # fmt: skip
    data = lab_settings.from_spec(
        cluster, registry=registry, code_bucket=code_bucket, s3_endpoint=s3_endpoint
    )
    return yaml.safe_dump(data, sort_keys=False)


def readers(cluster: Cluster, exclude: tuple[str, ...] = ()) -> list[dict]:
    return [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": u.name}
            for u in cluster.users if u.name not in exclude]  # fmt: skip


def objects(cluster: Cluster, registry: str | None = None, code_bucket: str | None = None,
            s3_endpoint: str | None = None, exclude: tuple[str, ...] = ()) -> list[dict]:  # fmt: skip
    meta = {"namespace": LAB_SETTINGS_NAMESPACE, "labels": LABELS}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": LAB_SETTINGS_CONFIGMAP, **meta},
         "data": {LAB_SETTINGS_KEY: document(cluster, registry, code_bucket, s3_endpoint)}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": READER, **meta},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [LAB_SETTINGS_CONFIGMAP],
                    "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": READER, **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": READER},
         "subjects": readers(cluster, exclude)},
    ]  # fmt: skip


FIELD_MANAGER = "research-cluster-lab"  # the manager `invoke up` applies the settings with


def apply(api_client, cluster: Cluster, registry: str | None = None, code_bucket: str | None = None,
          s3_endpoint: str | None = None, exclude: tuple[str, ...] = ()) -> list[str]:  # fmt: skip
    """Create or replace the three objects through the API; the lines say what was done."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from clusterspec.errors import UserError

    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    try:  # what only Terraform or a local cluster knows stays when this run does not know it (add-user)
        old = yaml.safe_load(core.read_namespaced_config_map(LAB_SETTINGS_CONFIGMAP, LAB_SETTINGS_NAMESPACE)
                             .data.get(LAB_SETTINGS_KEY) or "") or {}  # fmt: skip
    except (ApiException, AttributeError, yaml.YAMLError):
        old = {}
    registry = registry or old.get("registry")
    code_bucket = code_bucket or old.get("code_bucket")
    s3_endpoint = s3_endpoint or old.get("s3_endpoint")
    # Server-side apply with the field manager `invoke up` applies them with (provision/cluster_addons.py): a
    # create or replace here would make the client's own manager (OpenAPI-Generator) own the fields, and the next
    # `invoke up` would be refused with a conflict, as the real API server showed (issue 33).
    calls = {
        "ConfigMap": core.patch_namespaced_config_map,
        "Role": rbac.patch_namespaced_role,
        "RoleBinding": rbac.patch_namespaced_role_binding,
    }
    done = []
    for obj in objects(cluster, registry, code_bucket, s3_endpoint, exclude):
        name = obj["metadata"]["name"]
        try:
            calls[obj["kind"]](name, LAB_SETTINGS_NAMESPACE, obj, field_manager=FIELD_MANAGER, force=True,
                               _content_type="application/apply-patch+yaml")  # fmt: skip
        except ApiException as e:
            raise UserError(f"{obj['kind']} {LAB_SETTINGS_NAMESPACE}/{name}: {e.status} {e.reason}") from None
        done.append(f"applied {obj['kind']} {LAB_SETTINGS_NAMESPACE}/{name}")
    return done
