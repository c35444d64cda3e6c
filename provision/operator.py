"""Operator access: the admin kubeconfig and the service-account public key that control-plane member 0
publishes to SSM (terraform/modules/control_plane/scripts/bootstrap.sh, ``publish_operator_access``), read with
the role ``<cluster>-operator`` (terraform/modules/iam/operator.tf). Nobody needs an SSH key or an open port:
instances are reached through Session Manager, the API through the Client VPN (``api.<domain>:6443``)."""

from __future__ import annotations

import os
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.spec import Cluster


def kubeconfig_parameter(cluster: Cluster) -> str:
    return f"/{cluster.name}/control-plane/admin-kubeconfig"


def sa_pub_parameter(cluster: Cluster) -> str:
    return f"/{cluster.name}/control-plane/sa-pub"


def _read(cluster: Cluster, name: str, what: str, session: boto3.Session | None) -> str:
    region = cluster.primary_region
    ssm = (session or boto3.Session()).client("ssm", region_name=region)
    try:
        return ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code == "ParameterNotFound":
            raise UserError(
                f"{name} ({region}): not found: control-plane member 0 publishes {what} once the cluster is "
                "initialised; see `invoke control-plane-status`"
            ) from None
        if code in ("AccessDeniedException", "AccessDenied") or "KMS" in code:
            raise UserError(
                f"{name} ({region}): access denied ({code}): read it as the role {cluster.name}-operator "
                "(Terraform global output operator_role_arn)"
            ) from None
        raise UserError(f"{name} ({region}): {e}") from None
    except BotoCoreError as e:
        raise UserError(f"{name} ({region}): cannot reach SSM: {e}") from None


def fetch_kubeconfig(cluster: Cluster, out: Path, session: boto3.Session | None = None) -> Path:
    """Write the admin kubeconfig to OUT (mode 0600, replaced atomically); it never enters the repository."""
    text = _read(cluster, kubeconfig_parameter(cluster), "the admin kubeconfig", session)
    if "apiVersion: v1" not in text or "clusters:" not in text:
        raise UserError(f"{kubeconfig_parameter(cluster)}: not a kubeconfig; re-publish it from member 0")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return out


def fetch_sa_pub(cluster: Cluster, session: boto3.Session | None = None) -> bytes:
    """The control plane's /etc/kubernetes/pki/sa.pub, as member 0 published it."""
    return _read(cluster, sa_pub_parameter(cluster), "sa.pub", session).encode()
