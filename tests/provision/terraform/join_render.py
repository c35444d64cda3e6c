"""The user data of a cloud node as Terraform computes it: a throw-away root calling modules/node_join (or a module
that uses it), `terraform init` (no provider: the module is plain templatefile) and `terraform console`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clusterspec import kubelet_reserved
from provision.terraform.hcl import inline
from tests.provision.terraform.tf_files import MODULES
from tests.support import require_tool

JOIN = {
    "join_region": "us-west-2",
    "join_token_parameter": "/dlr/kubeadm/join-token",
    "ca_hash_parameter": "/dlr/kubeadm/ca-cert-hash",
    "api_endpoint": "api.research.internal:6443",
    "node_keys_bucket": "dlr-etcd-backups-123456789012",
}


def render_join(cwd: Path, node_labels: str, taints: str = "", types: list[str] | None = None,
                prelude: str = "") -> str:  # fmt: skip
    terraform = require_tool("terraform")
    values = JOIN | {
        "node_labels": node_labels,
        "taints": taints,
        "kubelet_reserved": kubelet_reserved.for_instance_types(types or ["m6i.2xlarge"]),
        "prelude": prelude,
    }
    body = "\n".join(f"  {k} = {inline(v)}" for k, v in values.items())
    (cwd / "main.tf").write_text(
        f'module "join" {{\n  source = {inline(str(MODULES / "node_join"))}\n{body}\n}}\n'
    )
    for argv in ([terraform, "init", "-backend=false", "-input=false"], [terraform, "console"]):
        done = subprocess.run(argv, input="jsonencode(module.join.user_data)" if argv[-1] == "console" else None,
                              cwd=cwd, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
    return json.loads(json.loads(done.stdout))
