"""The AWS provider from a filesystem mirror on this machine, and its schema.

``plugin_dir()`` finds a `terraform providers mirror` directory holding hashicorp/aws for this platform: an
explicit ``--plugin-dir``, else ``LAB_TF_PLUGIN_DIR``, else Terraform's implicit local mirror directories
(CLI configuration docs, "Implied Local Mirror Directories") and /opt/tf-plugins. None when there is none: then
``terraform init`` uses the registry as always.

``schema()`` is ``terraform providers schema -json`` of that provider (what the roots are planned and applied
with), reduced by provider_schema.from_terraform and kept under .cache/provider-aws per provider version.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path

from provision.terraform import provider_schema
from provision.terraform.settings import REPO

PROVIDER = Path("registry.terraform.io/hashicorp/aws")
CACHE = REPO / ".cache" / "provider-aws"
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def _platform() -> str:
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}_{machine}"


def candidates() -> list[Path]:
    home = Path.home()
    data = Path(os.environ.get("XDG_DATA_HOME", home / ".local" / "share"))
    return [
        home / ".terraform.d" / "plugins",
        data / "terraform" / "plugins",
        Path("/usr/local/share/terraform/plugins"),
        Path("/usr/share/terraform/plugins"),
        Path("/opt/tf-plugins"),
    ]


def versions(directory: Path) -> list[str]:
    """hashicorp/aws versions in a mirror directory for this platform (unpacked or zipped layout), sorted."""
    found = set()
    base = Path(directory) / PROVIDER
    for v in base.glob(f"*/{_platform()}"):
        if _VERSION.match(v.parent.name) and any(v.glob("terraform-provider-aws*")):
            found.add(v.parent.name)
    for z in base.glob(f"terraform-provider-aws_*_{_platform()}.zip"):
        found.add(z.name.split("_")[1])
    return sorted(found, key=lambda s: tuple(int(x) for x in s.split(".")))


def plugin_dir(explicit: Path | str | None = None) -> Path | None:
    """The mirror to init from: EXPLICIT as given, else the first directory found with hashicorp/aws."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("LAB_TF_PLUGIN_DIR")
    for d in ([Path(env)] if env else []) + candidates():
        if d.is_dir() and versions(d):
            return d
    return None


def schema(directory: Path, cache: Path = CACHE) -> dict:
    """The check's schema of the mirror's newest hashicorp/aws (cached per version)."""
    from provision.terraform.runner import require_terraform

    version = versions(directory)[-1]
    path = cache / f"schema-{version}.json.gz"
    if path.is_file():
        try:
            return provider_schema.load(path)
        except (OSError, ValueError):
            pass
    with tempfile.TemporaryDirectory(prefix="provider-schema-") as tmp:
        Path(tmp, "main.tf").write_text(
            'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = '
            f'"{version}" }}\n  }}\n}}\n'
        )
        env = os.environ | {"TF_IN_AUTOMATION": "1"}
        binary = require_terraform()
        subprocess.run(
            [binary, "init", "-input=false", "-backend=false", f"-plugin-dir={directory}"],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        out = subprocess.run(
            [binary, "providers", "schema", "-json"], cwd=tmp, env=env, check=True, capture_output=True
        ).stdout
    full = json.loads(out)
    reduced = provider_schema.from_terraform(full, version)
    reduced["endpoints"] = sorted(
        next(v for k, v in full["provider_schemas"].items() if k.endswith("hashicorp/aws"))["provider"][
            "block"
        ]["block_types"]["endpoints"]["block"]["attributes"]
    )
    provider_schema.write(reduced, path)
    return reduced


def check_schema(cache: Path = CACHE) -> tuple[Path, str]:
    """The schema file `invoke check-terraform` reads and a line saying which: the mirror's provider (what the
    roots are applied with) when this machine has one, else the copy `make tools` fetched from npm."""
    from provision.terraform.settings import PROVIDER_SCHEMA

    directory = plugin_dir()
    if directory is not None:
        version = versions(directory)[-1]
        schema(directory, cache)
        return (
            cache / f"schema-{version}.json.gz",
            f"hashicorp/aws {version} from the provider mirror {directory}",
        )
    return PROVIDER_SCHEMA, (
        "no hashicorp/aws mirror on this machine (Terraform's plugin directories, /opt/tf-plugins, "
        f"LAB_TF_PLUGIN_DIR): checking against the npm copy `make tools` fetched ({PROVIDER_SCHEMA.name}), "
        "not the provider the roots are applied with"
    )


def main() -> int:
    """`make tools`: the mirror's schema into the cache; exit status 1 when there is no mirror."""
    directory = plugin_dir()
    if directory is None:
        print("no hashicorp/aws provider mirror on this machine")
        return 1
    path, line = check_schema()
    print(f"{path}: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
