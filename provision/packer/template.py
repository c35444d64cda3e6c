"""The template under ``packer/``: its script list and environment (shared with Chef) and its build directory."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import hcl2

from provision import checkout

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIR = ROOT / "packer"
TEMPLATE = TEMPLATE_DIR / "gpu-worker.pkr.hcl"
PLUGINS = "plugins.pkr.hcl"  # `packer { required_plugins }`: Packer 1.7 and later only
_VAR = re.compile(r"\$\{var\.(\w+)\}")


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def _parsed(template: Path = TEMPLATE) -> dict:
    with template.open() as f:
        return hcl2.load(f)


def provisioner_scripts(template: Path = TEMPLATE) -> list[str]:
    """The shell scripts the image runs, in order (file names under ``packer/scripts/``)."""
    out: list[str] = []
    for build in _parsed(checkout.require(template))["build"]:
        for prov in build.get("provisioner", []):
            for kind, body in prov.items():
                if _unquote(kind) == "shell":
                    out += [Path(_unquote(s)).name for s in body.get("scripts", [])]
    return out


def script_environment(variables: dict, template: Path = TEMPLATE) -> dict[str, str]:
    """The scripts' environment (``local.script_env``) with ``variables`` substituted, as the image sees it."""
    env: dict[str, str] = {}
    for block in _parsed(template).get("locals", []):
        for entry in block.get("script_env", []):
            name, _, value = _unquote(entry).partition("=")
            env[name] = _VAR.sub(lambda m: str(variables[m.group(1)]), value)
    return env


# Packer 1.6 knows no metadata_options (IMDSv2 on the build instance): it is dropped from the staged template for
# Packer 1.6, which bake.py allows for the local bake only (moto has no instance metadata to protect).
_METADATA_OPTIONS = re.compile(r"\n  metadata_options \{.*?\n  \}\n", re.S)


def stage(dest: Path, *, with_plugins: bool) -> Path:
    """A build directory holding the template (without ``plugins.pkr.hcl`` and ``metadata_options`` for Packer
    1.6) and its scripts."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in sorted(checkout.require(TEMPLATE_DIR).glob("*.pkr.hcl")):
        if f.name == TEMPLATE.name and not with_plugins:
            (dest / f.name).write_text(_METADATA_OPTIONS.sub("\n", f.read_text(), count=1))
        elif f.name != PLUGINS or with_plugins:
            shutil.copy2(f, dest / f.name)
    shutil.copytree(TEMPLATE_DIR / "scripts", dest / "scripts")
    return dest
