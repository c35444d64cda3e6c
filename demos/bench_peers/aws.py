"""The benchmark's AWS: the demo's moto server (``localcluster/aws_server.py``: capacity that runs out) in a
process of its own, fresh for each run, counting the requests it serves by access key, service and action.

``GET /_bench/calls`` answers the counts as JSON: ``{"<key> <service> <Action>": n}``. The autoscaler signs with
the key ``demo``; the node agent with ``bench-agent`` (not the autoscaler's calls).

Run: ``python -m demos.bench_peers.aws [--limit REGION/TYPE=N ...]``; prints ``{"url": ...}`` when ready.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
import signal
import sys
import threading
from collections import Counter
from urllib.parse import parse_qs

from werkzeug.serving import make_server

from localcluster import aws_server

CALLS: Counter[str] = Counter()
_lock = threading.Lock()
_CREDENTIAL = re.compile(r"Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/")


def counting(app):
    def wrapped(environ, start_response):
        if environ.get("PATH_INFO") == "/_bench/calls":
            with _lock:
                body = json.dumps(dict(CALLS)).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        auth = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        if auth:
            size = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(size) if size else b""
            environ["wsgi.input"] = io.BytesIO(raw)
            params = parse_qs(environ.get("QUERY_STRING", "")) | parse_qs(raw.decode(errors="replace"))
            action = (params.get("Action") or [environ.get("HTTP_X_AMZ_TARGET", "?")])[0]
            with _lock:
                CALLS[f"{auth.group(1)} {auth.group(2)} {action}"] += 1
        return app(environ, start_response)

    return wrapped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m demos.bench_peers.aws", description=__doc__.splitlines()[0])
    ap.add_argument("--limit", action="append", default=[], metavar="REGION/TYPE=N")
    args = ap.parse_args(argv)
    try:
        limits = dict(aws_server.parse_limit(x) for x in args.limit)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    aws_server.install(limits)
    plain = aws_server.serve(0)
    server = make_server(
        "127.0.0.1", 0, counting(plain.app), threaded=True, request_handler=aws_server.MotoRequestHandler
    )
    plain.server_close()
    threading.Thread(target=server.serve_forever, daemon=True, name="moto").start()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_port}"}), flush=True)
    done.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
