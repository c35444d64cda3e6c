"""The job's init container: fetch the code snapshot, check it, unpack it into the job's working directory.

Runs in the pod as ``python3 -c <this file's text>`` on the job's own image (the standard image has Python and
boto3), as the researcher's uid, so the unpacked files and the folder they are in (an ``emptyDir``) are the job's to
write: ``out/``, ``runs/``, ``checkpoints/`` next to the code just work. Only the standard library and boto3.

Environment: ``LAB_CODE_URL`` (``s3://bucket/key`` of the gzipped tar, or ``file:///path`` on a local cluster),
``LAB_CODE_SHA256`` (the tar's SHA-256: the snapshot is content-addressed, and a mismatch stops the pod before the
code runs), ``LAB_CODE_DIR`` (where to unpack). S3 credentials are the pod's own (IRSA: the namespace's
ServiceAccount role reads ``results/<user>/``); with ``AWS_ENDPOINT_URL_S3`` (a local cluster's moto server) and no
credentials a placeholder key signs it (moto takes any). Exit status 1 with one line on any failure.
"""

import gzip
import hashlib
import io
import os
import sys
import tarfile
import time
import urllib.parse


def fetch(url):
    parts = urllib.parse.urlparse(url)
    if parts.scheme == "file":
        with open(urllib.parse.unquote(parts.path), "rb") as f:
            return f.read()
    if parts.scheme != "s3":
        raise SystemExit(f"lab: code URL {url!r}: expected s3:// or file://")
    import boto3
    import botocore

    kwargs = {}
    if os.environ.get("AWS_ENDPOINT_URL_S3") and boto3.session.Session().get_credentials() is None:
        kwargs = {
            "aws_access_key_id": "local",
            "aws_secret_access_key": "local",
        }  # a local moto server takes any
    s3 = boto3.client("s3", region_name=os.environ.get("AWS_REGION") or "us-west-2", **kwargs)
    last = None
    for attempt in range(5):
        try:
            return s3.get_object(Bucket=parts.netloc, Key=parts.path.lstrip("/"))["Body"].read()
        except botocore.exceptions.ClientError as e:
            raise SystemExit(f"lab: fetching {url}: {e}") from None
        except botocore.exceptions.BotoCoreError as e:  # the network: retried with back-off
            last = e
            time.sleep(2**attempt)
    raise SystemExit(f"lab: fetching {url}: {last}")


def main():
    url, want, dest = (os.environ[k] for k in ("LAB_CODE_URL", "LAB_CODE_SHA256", "LAB_CODE_DIR"))
    started = time.monotonic()
    blob = gzip.decompress(fetch(url))
    got = hashlib.sha256(blob).hexdigest()
    if got != want:
        raise SystemExit(
            f"lab: {url}: SHA-256 {got[:16]} is not the snapshot's {want[:16]}; resubmit the job"
        )
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        members = [m for m in tar.getmembers() if not m.name.startswith(".lab/")]
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later (PEP 706)
            try:
                tar.extractall(dest, members=members, filter="data")
            except tarfile.FilterError as e:
                raise SystemExit(f"lab: {url}: {e}") from None
        else:  # an older 3.11 (Debian 12's 3.11.2): what the data filter refuses, refused here
            for m in members:
                parts = m.name.split("/")
                if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                    raise SystemExit(
                        f"lab: {url}: {m.name!r} is not a plain file or folder inside the snapshot"
                    )
                m.mode &= 0o755
                m.uid = m.gid = -1
            tar.extractall(dest, members=members)
    took = time.monotonic() - started
    print(f"lab: code {want[:16]} ({len(members)} files, {len(blob)} bytes) in {dest} after {took:.2f} s")


try:
    main()
except SystemExit as e:
    if isinstance(e.code, str):
        print(e.code, file=sys.stderr)
        sys.exit(1)
    raise
