"""The only place that runs Terraform: python-terraform around one rendered root.

Failures the user can fix get one line naming the fix (UserError): no terraform binary, no AWS credentials,
an unreachable provider registry (use --plugin-dir with a provider mirror), a missing state bucket.
python-terraform 0.10.1's ``destroy`` passes ``-force``, which Terraform 1.x rejects, so destruction is a
saved ``plan -destroy`` applied through the generic ``cmd``.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import boto3
from python_terraform import IsFlagged, IsNotFlagged, Terraform

from clusterspec.errors import UserError
from provision.terraform.plan_summary import Disruption, disruptions

INSTALL_HINT = (
    "terraform is not installed or not on PATH: install Terraform >= 1.11 "
    "(https://developer.hashicorp.com/terraform/install, or `make tools` on Debian) and retry"
)
CREDENTIALS_HINT = (
    "no AWS credentials found: run `aws configure` or `aws sso login`, or set AWS_PROFILE "
    "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), then retry"
)
REGISTRY_HINT = (
    "terraform init could not download the AWS provider (registry.terraform.io unreachable): connect this "
    "machine, or on a connected one run `terraform providers mirror DIR` in {root} and pass --plugin-dir DIR"
)
MIRROR_HINT = (
    "--plugin-dir {plugin_dir} has no hashicorp/aws matching the pinned version: on a connected machine run "
    "`terraform providers mirror {plugin_dir}` in {root} and copy the directory here"
)
AWS_UNREACHABLE_HINT = (
    "terraform init could not reach AWS (STS) to check the credentials: check this machine's network, DNS "
    "or proxy (HTTPS_PROXY), then retry"
)
BAD_CREDENTIALS_HINT = (
    "AWS rejected the credentials (invalid or expired): refresh them (`aws sso login`, new keys) and retry"
)
STATE_HINT = "the state bucket does not exist (or is not yours): run `invoke bootstrap-state` first"
_REGISTRY_SIGNS = (
    "Failed to query available provider packages",
    "could not connect to registry.terraform.io",
    "Failed to install provider",
    "failed to retrieve authentication checksums",
)
_STATE_SIGNS = ("NoSuchBucket", "S3 bucket does not exist", "ResourceNotFoundException")

PLAN_FILE = "tfplan"
DESTROY_PLAN_FILE = "destroy.tfplan"


def require_terraform(binary: str | None = None) -> str:
    found = shutil.which(binary or "terraform")
    if not found:
        raise UserError(INSTALL_HINT)
    return found


def require_aws_credentials() -> None:
    """Credentials are present somewhere boto3 looks (no network call is made)."""
    if boto3.Session().get_credentials() is None:
        raise UserError(CREDENTIALS_HINT)


def _error_lines(text: str) -> str:
    """Terraform's ``Error:`` lines, joined, or the last non-empty line."""
    lines = [ln.strip(" │╷╵") for ln in text.splitlines()]
    errors = [ln.strip() for ln in lines if ln.strip().startswith("Error:")]
    if errors:
        return "; ".join(dict.fromkeys(errors))
    rest = [ln.strip() for ln in lines if ln.strip()]
    return rest[-1] if rest else "no output"


@dataclass
class Changes:
    """What a saved plan would do, by action."""

    create: list[str] = field(default_factory=list)
    update: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)  # deletions, including the delete half of replacements
    resources: list[str] = field(default_factory=list)  # every managed resource the plan covers (no-ops too)
    disruptive: list[Disruption] = field(
        default_factory=list
    )  # what `up` shows and asks about (plan_summary)
    plan: dict = field(default_factory=dict, repr=False, compare=False)  # the JSON of `terraform show -json`

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    def summary(self) -> str:
        return f"{len(self.create)} to create, {len(self.update)} to change, {len(self.delete)} to destroy"

    @classmethod
    def from_plan_json(cls, plan: dict) -> Changes:
        out = cls(plan=plan)
        for rc in plan.get("resource_changes", []):
            actions = rc.get("change", {}).get("actions", [])
            if rc.get("mode", "managed") == "managed":
                out.resources.append(rc["address"])
            if "delete" in actions:
                out.delete.append(rc["address"])
            if "create" in actions:
                out.create.append(rc["address"])
            if "update" in actions:
                out.update.append(rc["address"])
        out.disruptive = disruptions(plan)
        return out


def _rendered_backend(versions: Path) -> dict:
    """The S3 backend block of a rendered root's versions.tf as plain values (strings unquoted, booleans)."""
    text = versions.read_text()
    block = re.search(r'backend "s3" \{(.*?)\n  \}', text, re.S)
    if not block:
        return {}
    values = {}
    for key, value in re.findall(r"^\s*(\w+)\s*=\s*(.+?)\s*$", block[1], re.M):
        values[key] = {"true": True, "false": False}.get(value, value.strip('"'))
    return values


class Runner:
    """Terraform in one rendered root directory."""

    def __init__(
        self,
        root: Path,
        plugin_dir: Path | None = None,
        binary: str | None = None,
        backend_config: Path | None = None,
    ):
        self.root = Path(root)
        if not (self.root / "versions.tf").exists():
            raise UserError(f"{self.root}: no rendered Terraform root here; run `invoke render` first")
        if plugin_dir is not None and not Path(plugin_dir).is_dir():
            raise UserError(
                f"--plugin-dir {plugin_dir}: not a directory (expected a `terraform providers mirror`)"
            )
        self.plugin_dir = plugin_dir
        self.backend_config = backend_config  # --endpoint: the state in the embedded AWS (endpoint.py)
        self.tf = Terraform(working_dir=str(self.root), terraform_bin_path=require_terraform(binary))

    def _run(self, *args: str, stream: bool = False, **options) -> tuple[int, str, str]:
        options.setdefault("no_color", IsFlagged)
        if stream:
            code, _, _ = self.tf.cmd(*args, capture_output=False, **options)
            return code, "", ""
        return self.tf.cmd(*args, **options)

    def _fail(self, what: str, code: int, err: str) -> UserError:
        if any(sign in " ".join(err.split()) for sign in _STATE_SIGNS):
            return UserError(f"{self.root}: {STATE_HINT}")
        detail = _error_lines(err) if err else "see Terraform's messages above"
        return UserError(f"{self.root}: terraform {what} failed (exit {code}): {detail}")

    def _only_locking_changed(self) -> bool:
        """The root was initialised with the same state object (bucket, key, region) but other backend
        settings: the move from a DynamoDB lock table to ``use_lockfile``. ``init -reconfigure`` is then safe
        (the state stays where it is); a different bucket or key is left to Terraform's own migration prompt."""
        cached = self.root / ".terraform" / "terraform.tfstate"
        if not cached.is_file():
            return False
        try:
            old = json.loads(cached.read_text()).get("backend", {}).get("config", {})
        except ValueError:
            return False
        new = _rendered_backend(self.root / "versions.tf")
        where = ("bucket", "key", "region")
        return (
            bool(new)
            and all(old.get(k) == new.get(k) for k in where)
            and (
                old.get("dynamodb_table") != new.get("dynamodb_table")
                or old.get("use_lockfile") != new.get("use_lockfile")
            )
        )

    def _cached_endpoint(self) -> bool:
        """The root was last initialised against an embedded AWS (its backend has endpoints)."""
        try:
            cached = json.loads((self.root / ".terraform" / "terraform.tfstate").read_text())
        except (OSError, ValueError):
            return False
        return bool(cached.get("backend", {}).get("config", {}).get("endpoints"))

    def init(self) -> None:
        options = {"input": False, "plugin_dir": str(self.plugin_dir) if self.plugin_dir else None}
        if self.backend_config is not None or self._cached_endpoint():
            # to or from a rehearsal's embedded AWS: never migrate state between it and AWS
            options["reconfigure"] = IsFlagged
            if self.backend_config is not None:
                options["backend_config"] = str(self.backend_config.resolve())
        elif self._only_locking_changed():
            print(
                f"[{self.root.name}] state locking moves to an S3 lock file (use_lockfile): init -reconfigure"
            )
            options["reconfigure"] = IsFlagged
        print(f"[{self.root.name}] terraform init (a first run downloads the providers)", flush=True)
        code, _, raw = self._run("init", **options)
        if code == 0:
            return
        err = " ".join(raw.split())  # Terraform wraps its messages at 78 columns
        if self.plugin_dir and "not found in any of the search locations" in err:
            raise UserError(MIRROR_HINT.format(plugin_dir=self.plugin_dir, root=self.root))
        if any(sign in err for sign in _REGISTRY_SIGNS):
            raise UserError(REGISTRY_HINT.format(root=self.root))
        if "No valid credential sources found" in err or "failed to refresh cached credentials" in err:
            raise UserError(CREDENTIALS_HINT)
        if any(sign in err for sign in ("InvalidClientTokenId", "ExpiredToken", "SignatureDoesNotMatch")):
            raise UserError(BAD_CREDENTIALS_HINT)
        if "GetCallerIdentity" in err and any(s in err for s in ("dial tcp", "i/o timeout", "no such host")):
            raise UserError(AWS_UNREACHABLE_HINT)
        raise self._fail("init", code, raw)

    def plan(self, destroy: bool = False, targets: list[str] | None = None) -> Changes:
        """A saved plan (``tfplan`` or ``destroy.tfplan`` in the root) and what it would change; TARGETS: only
        those resources and what they depend on (the rehearsal's left-out resources, rehearsal.py)."""
        plan_file = DESTROY_PLAN_FILE if destroy else PLAN_FILE
        code, _, _ = self._run(
            "plan",
            stream=True,
            input=False,
            out=plan_file,
            destroy=IsFlagged if destroy else IsNotFlagged,
            target=targets or None,
        )
        if code != 0:
            raise self._fail("plan", code, "")
        return self.show(plan_file)

    def show(self, plan_file: str) -> Changes:
        code, out, err = self._run("show", "-json", plan_file)
        if code != 0:
            raise self._fail("show", code, err)
        return Changes.from_plan_json(json.loads(out))

    def apply(self, destroy: bool = False) -> None:
        """Apply the saved plan (for destruction: the saved ``plan -destroy``; never ``terraform destroy``,
        whose python-terraform wrapper sends the ``-force`` flag Terraform 1.x rejects)."""
        plan_file = DESTROY_PLAN_FILE if destroy else PLAN_FILE
        code, _, _ = self._run("apply", plan_file, stream=True, input=False)
        (self.root / plan_file).unlink(missing_ok=True)
        if code != 0:
            raise self._fail("apply", code, "")

    def write_outputs(self) -> Path:
        """``terraform output -json`` into ``outputs.json`` (what the Chef part reads; no secrets in it)."""
        code, out, err = self._run("output", "-json")
        if code != 0:
            raise self._fail("output", code, err)
        path = self.root / "outputs.json"
        path.write_text(json.dumps(json.loads(out), indent=2, sort_keys=True) + "\n")
        return path
