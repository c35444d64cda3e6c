"""kubectl for the deploy tasks (autoscaler, add-ons, gang scheduler): find it, prove it reaches a cluster, and
apply a file or a URL. Every way nothing gets applied is a one-line UserError, never a quiet success."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusterspec.errors import UserError


def _failure(kubectl: str) -> str | None:
    """Why kubectl cannot reach a cluster with the current context (its own last line), None when it can."""
    try:
        done = subprocess.run(
            [kubectl, "version", "--request-timeout=5s", "-o", "json"],
            capture_output=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "kubectl version did not answer within 15 s"
    except OSError as e:
        return f"kubectl could not run: {e.strerror or e}"
    if done.returncode == 0 and b"serverVersion" in done.stdout:
        return None
    said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
    return said[-1].strip() if said else f"kubectl version exited {done.returncode} with no server version"


def reachable(kubectl: str | None = None) -> bool:
    exe = kubectl or shutil.which("kubectl")
    return bool(exe) and _failure(exe) is None


def ready(rendered: Path, kubectl: str | None = None) -> str:
    """kubectl's path when it reaches a cluster; otherwise a UserError naming why and where the files are."""
    exe = kubectl or shutil.which("kubectl")
    if not exe:
        raise UserError(
            f"kubectl: not found on the PATH: nothing was deployed; the manifests are in {rendered}"
        )
    reason = _failure(exe)
    if reason:
        raise UserError(
            f"no reachable cluster with the current kubeconfig context ({reason}): nothing was deployed; "
            f"the manifests are in {rendered}"
        )
    return exe


def apply(kubectl: str, target: str | Path, field_manager: str | None = None) -> None:
    """``kubectl apply -f TARGET`` (server-side with ``field_manager``); a failure is one line with kubectl's
    last word and its exit status."""
    argv = [kubectl, "apply"]
    if field_manager:
        argv += ["--server-side", f"--field-manager={field_manager}"]
    done = subprocess.run([*argv, "-f", str(target)], capture_output=True, text=True, check=False)
    if done.returncode:
        why = (done.stderr or done.stdout).strip().splitlines()
        error = UserError(
            f"kubectl apply -f {target} failed: {why[-1] if why else f'exit {done.returncode}'}"
        )
        error.exit_code = done.returncode
        raise error
    if done.stdout.strip():
        print(done.stdout.strip())
