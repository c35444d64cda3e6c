"""``python -m localcluster [--dir DIR] [--no-kwok]``: the real local control plane, up until Ctrl-C; prints the
admin's kubeconfig, the start time and each binary's version."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from localcluster import binaries
from localcluster.stack import Stack, StackFailed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dir", default="build/localcluster", help="the stack's folder (default: %(default)s)"
    )
    parser.add_argument("--no-kwok", action="store_true", help="no kwok (nodes and pods are nobody's)")
    parser.add_argument("--versions", action="store_true", help="print each binary's version and exit")
    args = parser.parse_args(argv)
    if args.versions:
        for name in binaries.ALL:
            try:
                print(f"{name:24} {binaries.version(name)}")
            except binaries.Missing as e:
                print(f"{name:24} missing ({e})")
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stack = Stack(Path(args.dir).resolve(), kwok=not args.no_kwok).start()
    except (StackFailed, binaries.Missing) as e:
        print(f"localcluster: {e}", file=sys.stderr)
        return 2
    try:
        print(f"the control plane is up at {stack.server} in {stack.timings['started']:.1f} s "
              f"(API ready after {stack.timings['api ready']:.1f} s)", flush=True)  # fmt: skip
        print(f"  export KUBECONFIG={stack.admin_kubeconfig}", flush=True)
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(1.0):
            stack.processes.check()
    except RuntimeError as e:
        print(f"localcluster: {e}", file=sys.stderr)
        return 1
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
