"""The job's main container starts here: ``python3 -c <this file's text> COMMAND...``.

- The job's venv (``LAB_VENV``, made by labctl/jobenv.py) first on ``PATH``, with ``VIRTUAL_ENV``: ``python``,
  ``pip`` and ``torchrun`` are the job's, as after ``source .venv/bin/activate`` on a laptop.
- ``$LOG_DIR`` (the results volume) is created, and the command's stdout and stderr are copied, as they come, both
  to the container's own (``kubectl logs``, ``lab logs``) and to ``$LOG_DIR/logs/node-<index>.log`` (appended, one
  header line per start): the output outlives the pod, its node and the Job.
- ``LAB_KEEP`` (``lab submit --keep out``; paths relative to the working directory, ``:``-separated): once the
  command ends, however it ends, each is copied to ``$LOG_DIR/<path>``, so what a project writes next to its code
  (minGPT's and nanoGPT's ``./out``) outlives the pod.
- SIGTERM and SIGINT go to the command; the exit status is the command's (128 + N for a signal), so the Job's
  failure policy sees the command's own.

Only the standard library; the image's Python.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time


def log_file():
    log_dir = os.environ.get("LOG_DIR")
    if not log_dir:
        return None
    index = os.environ.get("JOB_COMPLETION_INDEX") or os.environ.get("NODE_RANK") or "0"
    try:
        os.makedirs(os.path.join(log_dir, "logs"), exist_ok=True)
        f = open(os.path.join(log_dir, "logs", f"node-{index}.log"), "ab", buffering=0)  # noqa: SIM115
    except OSError as e:
        print(f"lab: {log_dir}: {e}; the output goes to the pod's log only", file=sys.stderr, flush=True)
        return None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    f.write(f"--- lab: {os.environ.get('HOSTNAME', '?')} started {stamp}\n".encode())
    return f


def keep(log_dir, paths):
    """Copy what the command wrote next to the code to $LOG_DIR; one line each, never a failure of the job."""
    import shutil

    for rel in [p for p in paths.split(":") if p]:
        src, dst = os.path.abspath(rel), os.path.join(log_dir, rel.strip("/"))
        try:
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
            elif os.path.exists(src):
                os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
                shutil.copy2(src, dst)
            else:
                print(f"lab: --keep {rel}: the command wrote no {rel}", file=sys.stderr, flush=True)
                continue
            print(f"lab: kept {rel} in {dst}", file=sys.stderr, flush=True)
        except OSError as e:
            print(f"lab: --keep {rel}: {e}", file=sys.stderr, flush=True)


def pump(src, dst, copy, lock):
    while True:
        chunk = os.read(src.fileno(), 65536)
        if not chunk:
            break
        dst.write(chunk)
        dst.flush()
        if copy is not None:
            with lock, contextlib.suppress(OSError):  # a full or vanished results volume never stops the job
                copy.write(chunk)


def main(argv):
    if not argv:
        raise SystemExit("lab: entry: no command")
    env = dict(os.environ)
    venv = env.get("LAB_VENV")
    if venv and os.path.exists(os.path.join(venv, "bin", "python")):
        env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
        env["VIRTUAL_ENV"] = venv
        env.pop("PYTHONHOME", None)
    copy = log_file()
    lock = threading.Lock()
    try:
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise SystemExit(f"lab: {argv[0]}: {e.strerror}") from None
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: child.send_signal(n))
    threads = [
        threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, copy, lock), daemon=True),
        threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer, copy, lock), daemon=True),
    ]
    for t in threads:
        t.start()
    rc = child.wait()
    for t in threads:
        t.join()
    if os.environ.get("LAB_KEEP") and os.environ.get("LOG_DIR"):
        keep(os.environ["LOG_DIR"], os.environ["LAB_KEEP"])
    if copy is not None:
        copy.write(f"--- lab: exit {rc}\n".encode())
        copy.close()
    return 128 - rc if rc < 0 else rc


try:
    sys.exit(main(sys.argv[1:]))
except SystemExit as e:
    if isinstance(e.code, str):
        print(e.code, file=sys.stderr)
        sys.exit(127)
    raise
