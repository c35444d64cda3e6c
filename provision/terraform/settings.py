"""Where Terraform output goes and the names of its state backend."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = REPO / "terraform" / "modules"
TEMPLATES = REPO / "terraform" / "roots"
DEFAULT_OUT = REPO / "build" / "terraform"
AMI_DIR = REPO / "build" / "ami"
GLOBAL = "global"
AWS_PROVIDER_VERSION = ">= 5.100, < 7.0"
# The AWS provider's schema for the offline check, written by `make tools` (scripts/install-tools.sh).
PROVIDER_SCHEMA = REPO / ".cache" / "provider-aws" / "schema.json.gz"


@dataclass(frozen=True)
class Backend:
    """The S3 state bucket (created by ``invoke bootstrap-state``). Locks are S3 lock files next to each state
    object (``use_lockfile``, Terraform >= 1.10); ``legacy_lock_table`` is the DynamoDB table earlier versions
    locked with (deprecated in Terraform 1.11), which bootstrap-state only reports."""

    bucket: str
    legacy_lock_table: str
    region: str

    @classmethod
    def for_cluster(cls, name: str, region: str, bucket: str | None = None) -> Backend:
        return cls(bucket or f"{name}-terraform-state", f"{name}-terraform-locks", region)

    def key(self, root: str) -> str:
        return f"{root}/terraform.tfstate"
