"""``invoke local-cluster``: the local cluster of ``make demo`` kept up for trying ``lab`` on your own code.

moto (EC2, Auto Scaling, the results bucket), the real control plane following it (localcluster/: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, the gang scheduler, kwok) with what ``invoke up`` deploys,
the real ``autoscaler run``, a researcher (``alice``, her kubeconfig from the CSR API) and the lab settings
published: ``lab`` sees a cluster as it would see the lab's. It prints the lines to paste into another shell (and
the admin's kubeconfig) and serves until Ctrl-C; GPU nodes boot on demand (compressed 60 times) when a job asks for
them; every node is the process kubelet's (localcluster/kubelet/): the jobs' pods run your code as local processes
(on the CPU, torch with gloo), and so do the pods ``lab`` starts on CPU nodes (TensorBoard, a gone pod's reader), ``lab logs`` and ``kubectl logs`` show its real output through the API server, and
``$LOG_DIR`` is a folder under ``build/local-cluster/pods/claims/``.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from clusterspec.loader import load_spec
from demos.researcher.run import local_cluster


def main(
    spec_path: str | None = None, out_dir: str | None = None, until: threading.Event | None = None
) -> None:
    spec = load_spec(spec_path)
    out = Path(out_dir or "build/local-cluster")
    secrets = out / "alice"
    secrets.mkdir(parents=True, exist_ok=True, mode=0o700)
    stop = until or threading.Event()
    if until is None:
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with local_cluster(spec, out, secrets) as (added, url, admin):
        print(f"\nthe local cluster is up (the admin's kubeconfig: {Path(admin).resolve()}); in another shell:",
              flush=True)  # fmt: skip
        print(f"  export KUBECONFIG={added.kubeconfig.resolve()} LAB_ENGINE=", flush=True)
        print("  cd your/project && lab submit --gpus 1 -- torchrun train.py", flush=True)
        print("Ctrl-C stops it (and everything it started).", flush=True)
        stop.wait()
