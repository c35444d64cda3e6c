"""Render the Terraform roots: ``<out>/<region>/`` for every region and ``<out>/global/``.

Jinja fills values and repeats blocks; every decision lives in ``context`` (Python) or the modules (HCL). The
output is deterministic: the same spec and AMI files give byte-identical files.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import checkout
from provision.terraform import context
from provision.terraform.hcl import literal
from provision.terraform.settings import AMI_DIR, DEFAULT_OUT, GLOBAL, MODULES, TEMPLATES, Backend


@dataclass(frozen=True)
class Rendered:
    root: str
    path: Path
    files: list[str]


def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(checkout.require(TEMPLATES))),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701 - HCL, not HTML; values go through the hcl filter
    )
    env.filters["hcl"] = lambda value, indent=0: literal(value, indent)
    return env


def _write_root(env: Environment, kind: str, values: dict, target: Path) -> list[str]:
    """Render every template of ``terraform/roots/<kind>/`` into ``target``; a template that renders to
    nothing (e.g. the Client VPN variables outside the primary region) writes no file."""
    if target.exists():
        # Only what render wrote before: *.tf files. .terraform/ and lock files of an initialised root stay.
        for old in target.glob("*.tf"):
            old.unlink()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for template in sorted(checkout.require(TEMPLATES / kind).glob("*.tf.j2")):
        text = env.get_template(f"{kind}/{template.name}").render(**values)
        if not text.strip():
            continue
        name = template.name.removesuffix(".j2")
        (target / name).write_text(text)
        written.append(name)
    return written


def roots(cluster: Cluster) -> list[str]:
    """Every root in apply order: global first, then the regions in spill-over order."""
    return [GLOBAL, *cluster.spill_over_order]


def render(
    cluster: Cluster,
    regions: list[str] | None = None,
    out_dir: Path = DEFAULT_OUT,
    state_bucket: str | None = None,
    ami_dir: Path = AMI_DIR,
) -> list[Rendered]:
    """Render the global root and the given regions (default: all); returns what was written."""
    known = cluster.spill_over_order
    wanted = regions or known
    unknown = [r for r in wanted if r not in known]
    if unknown:
        raise UserError(f"--region {', '.join(unknown)}: not in the spec; regions are {', '.join(known)}")
    out_dir = Path(out_dir).resolve()
    backend = Backend.for_cluster(cluster.name, cluster.primary_region, state_bucket)
    env = _env()
    done = [
        Rendered(
            GLOBAL,
            out_dir / GLOBAL,
            _write_root(env, GLOBAL, context.global_context(cluster, backend, out_dir), out_dir / GLOBAL),
        )
    ]
    for region in (r for r in known if r in wanted):
        values = context.region_context(cluster, region, backend, out_dir, ami_dir) | {
            "failover_zip": FAILOVER_ZIP
        }
        done.append(Rendered(region, out_dir / region, _write_root(env, "region", values, out_dir / region)))
        if region == cluster.primary_region:
            write_failover_zip(out_dir / region / FAILOVER_ZIP)
    return done


# The pod gateway's failover function (terraform/modules/pod_gateway/failover/failover.py), zipped for Lambda into
# the primary root: byte-for-byte the same zip for the same source (fixed time stamps), so its hash changes only
# when the code does.
FAILOVER_SOURCE = MODULES / "pod_gateway" / "failover" / "failover.py"
FAILOVER_ZIP = ".build/pod-gateway-failover.zip"


def write_failover_zip(path: Path, source: Path = FAILOVER_SOURCE) -> Path:
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    info = zipfile.ZipInfo(source.name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as z:
        z.writestr(info, source.read_bytes())
    tmp.replace(path)
    return path


def clean(out_dir: Path = DEFAULT_OUT) -> None:
    """Remove rendered output entirely (tests use it on temporary directories)."""
    shutil.rmtree(out_dir, ignore_errors=True)
