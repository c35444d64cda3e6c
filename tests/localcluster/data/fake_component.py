"""A stand-in for kube-controller-manager or kube-scheduler as Stack starts them: binds 127.0.0.1 on its
--secure-port and serves until killed; exits 1 with the Go servers' message when the port is taken, or with
another error when FAKE_FAIL is set."""

import os
import socket
import sys
import time

port = int(next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--secure-port=")))
if os.environ.get("FAKE_FAIL"):
    print(f"E1207 error: {os.environ['FAKE_FAIL']}", flush=True)
    sys.exit(1)
s = socket.socket()
try:
    s.bind(("127.0.0.1", port))
except OSError:
    print(
        f"failed to listen on 127.0.0.1:{port}: listen tcp 127.0.0.1:{port}: bind: address already in use",
        flush=True,
    )
    sys.exit(1)
s.listen()
while True:
    time.sleep(1)
