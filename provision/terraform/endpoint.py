"""`--endpoint URL`: every root, its state backend and boto3 pointed at an embedded AWS (the project's moto server,
localcluster/aws_server.py), for rehearsing the day-one path (`make day-one`, docs/terraform.md).

With an endpoint each rendered root gets ``endpoint_override.tf`` (a Terraform override file, merged into its
``provider "aws"`` blocks, aliases included): every service endpoint the provider knows (read from its schema),
dummy credentials, path-style S3, and no credential, region or metadata-service checks. The account id is still
requested (STS GetCallerIdentity, which the embedded AWS answers): resources whose ARNs the provider builds need it.
The S3 backend is pointed there by ``endpoint.backend.hcl`` (``init -backend-config``). boto3 (preflight,
bootstrap-state, the teardown's steps) follows ``AWS_ENDPOINT_URL`` with the same dummy credentials.
Without an endpoint the files are removed, so a root never keeps pointing at a rehearsal.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path
from urllib.parse import urlparse

from clusterspec.errors import UserError

ALIASES = Path(__file__).parent / "data" / "endpoint_aliases.yaml"
OVERRIDE_FILE = "endpoint_override.tf"
BACKEND_FILE = "endpoint.backend.hcl"
# moto's documented dummy credentials; never real ones, so nothing real is sent to the embedded AWS
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_ALIAS = re.compile(r'^\s*alias\s*=\s*"([^"]+)"', re.M)


def check_url(url: str) -> str:
    """An http(s) URL on a loopback address: the embedded AWS runs on this machine, never elsewhere."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parsed.scheme not in ("http", "https") or not loopback or parsed.path not in ("", "/"):
        raise UserError(
            f"--endpoint {url}: expected the embedded AWS's URL on this machine, e.g. http://127.0.0.1:5000 "
            "(`python -m localcluster.aws_server` prints it)"
        )
    return url.rstrip("/")


def use(url: str) -> None:
    """Point this process's boto3 (and the Terraform it starts) at URL with dummy credentials."""
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        os.environ.pop(key, None)
    os.environ.update(DUMMY_CREDENTIALS)
    os.environ["AWS_ENDPOINT_URL"] = url
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    # no account-id host prefix (S3 Control's <account>.host): the embedded AWS is one host
    os.environ["AWS_DISABLE_HOST_PREFIX_INJECTION"] = "true"


def services(keys: list[str]) -> list[str]:
    """The provider's ``endpoints`` keys (its schema, mirror.schema()), less the aliases of another key
    (data/endpoint_aliases.yaml: setting two names of one service draws the provider's warning, later an error)."""
    import yaml

    groups = yaml.safe_load(ALIASES.read_text())
    aliases = {name for group in groups for name in group[1:]}
    return sorted(k for k in keys if k not in aliases)


def _aliases(root: Path) -> list[str | None]:
    found: list[str | None] = [None]
    for tf in sorted(root.glob("*.tf")):
        if tf.name == OVERRIDE_FILE:
            continue
        text = tf.read_text()
        for block in re.findall(r'^provider "aws" \{(.*?)^\}', text, re.M | re.S):
            alias = _ALIAS.search(block)
            if alias and alias[1] not in found:
                found.append(alias[1])
    return found


def override(root: Path, url: str, service_keys: list[str]) -> str:
    """The override file's text for ROOT (one block per provider configuration of the root)."""
    endpoints = "\n".join(f"    {k} = {json.dumps(url)}" for k in service_keys)
    blocks = []
    for alias in _aliases(root):
        blocks.append(
            'provider "aws" {\n'
            + (f"  alias = {json.dumps(alias)}\n" if alias else "")
            + f"  access_key = {json.dumps(DUMMY_CREDENTIALS['AWS_ACCESS_KEY_ID'])}\n"
            + f"  secret_key = {json.dumps(DUMMY_CREDENTIALS['AWS_SECRET_ACCESS_KEY'])}\n"
            + "  skip_credentials_validation = true\n"
            + "  skip_region_validation      = true\n"
            + "  skip_metadata_api_check     = true\n"
            + "  s3_use_path_style           = true\n"
            + f"  endpoints {{\n{endpoints}\n  }}\n"
            + "}\n"
        )
    head = f"# Written by `--endpoint {url}` (provision/terraform/endpoint.py): the embedded AWS, not AWS.\n"
    return head + "\n".join(blocks)


def backend_config(url: str) -> str:
    return (
        f"# Written by `--endpoint {url}`: the state in the embedded AWS's S3.\n"
        f"endpoints = {{\n  s3  = {json.dumps(url)}\n  sts = {json.dumps(url)}\n  iam = {json.dumps(url)}\n}}\n"
        f"access_key = {json.dumps(DUMMY_CREDENTIALS['AWS_ACCESS_KEY_ID'])}\n"
        f"secret_key = {json.dumps(DUMMY_CREDENTIALS['AWS_SECRET_ACCESS_KEY'])}\n"
        "use_path_style = true\n"
        "skip_credentials_validation = true\n"
        "skip_region_validation = true\n"
        "skip_metadata_api_check = true\n"
        "skip_requesting_account_id = true\n"
    )


def write(root: Path, url: str | None, service_keys: list[str] | None) -> Path | None:
    """Write (URL) or remove (None) the root's override and backend files; the backend file's path, if any."""
    files = (root / OVERRIDE_FILE, root / BACKEND_FILE)
    if url is None:
        for f in files:
            f.unlink(missing_ok=True)
        return None
    files[0].write_text(override(root, url, service_keys or []))
    files[1].write_text(backend_config(url))
    return files[1]


def _unprefixed(request, **_) -> None:
    """S3 Control's endpoint rules put the account id before the host (``<account>.host``), which a loopback
    endpoint cannot resolve: send it to the host itself (the embedded AWS reads the account from the header)."""
    parsed = urlparse(request.url)
    first, _, rest = parsed.netloc.partition(".")
    if first.isdigit() and len(first) == 12 and rest:
        request.url = parsed._replace(netloc=rest).geturl()


def client(session, service: str, region: str):
    """A boto3 client; with an embedded AWS (AWS_ENDPOINT_URL set by use()), S3 Control without the host prefix."""
    made = session.client(service, region_name=region)
    if service == "s3control" and os.environ.get("AWS_ENDPOINT_URL"):
        made.meta.events.register("before-sign.s3-control", _unprefixed)
    return made
