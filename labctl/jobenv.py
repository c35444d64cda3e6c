"""The job's deps init container: a virtual environment of the job's own, with the image's packages visible, and
the project installed in it as its README says (``pip install -e .``, ``pip install -r requirements.txt``).

Runs in the pod as ``python3 -c <this file's text>`` on the job's image, as the researcher's uid, after the code is
unpacked (labctl/unpack.py). The image's environment (``/opt/venv`` on the standard image) belongs to root and is
read-only to the job, as a laptop's system Python is to its user; so, as on a laptop, the job gets a venv that sees
it (what ``python -m venv --system-site-packages`` gives, except that from inside a venv that flag would expose the
base interpreter's packages, not the image venv's: a ``.pth`` calls ``site.addsitedir`` on the image's site
folders instead, so their own ``.pth`` files are read too). What the image has counts as installed; only what it
lacks is fetched (pip's cache on the home volume); a version the project needs in place of the image's is installed
in the job's venv and wins (pip never uninstalls outside its environment). Editable installs work, because the
venv's site-packages is a site directory (``PYTHONPATH`` is not: an editable install's ``.pth`` there is never read).

The image's console scripts (``torchrun``, ``accelerate``, ``pip``, ...) get copies in the venv's ``bin`` whose
``#!`` names the venv's interpreter: ``torchrun`` starts its workers with ``sys.executable``, which must see the
job's packages. ``pip`` in the job's command therefore installs into the job's venv, as on a laptop. An image
without pip (a bare ``uv venv``) gets pip into the job's venv from the interpreter's own ``ensurepip`` (no network).

Environment: ``LAB_VENV`` (where the venv goes), ``LAB_CODE_DIR`` (the unpacked code: the working directory of the
installs), ``LAB_INSTALL`` (JSON: a list of pip ``install`` argument lists, e.g. ``[["-r", "requirements.txt"],
["-e", "."]]``), ``LAB_NO_BUILD_ISOLATION`` (``1``: the image has the project's build requirements, so nothing is
fetched to build it, by these installs or by a ``pip install -e .`` in the job's command). Only the standard library. Exit status: pip's, with one line saying which install failed.
"""

import json
import os
import re
import site
import subprocess
import sys
import sysconfig
import time
import venv

SKIP = ("python", "activate", "Activate", "deactivate")


def image_site_dirs():
    return [d for d in site.getsitepackages() if os.path.isdir(d)]


def venv_site_dir(path):
    scheme = sysconfig.get_paths(vars={"base": path, "platbase": path})
    return scheme["purelib"]


def copy_scripts(dest_bin):
    """The image venv's console scripts, pointed at the job venv's interpreter (only for a venv image: a system
    Python's /usr/bin is not the image's scripts)."""
    if sys.prefix == sys.base_prefix:
        return 0
    src_bin = os.path.join(sys.prefix, "bin")
    py = os.path.join(dest_bin, "python")
    copied = 0
    for name in sorted(os.listdir(src_bin)):
        src, dst = os.path.join(src_bin, name), os.path.join(dest_bin, name)
        if name.startswith(SKIP) or os.path.lexists(dst) or not os.path.isfile(src):
            continue
        with open(src, "rb") as f:
            head = f.read(2)
            if head != b"#!":
                continue
            text = head + f.read()
        try:
            text = text.decode()
        except UnicodeDecodeError:
            continue
        first, _, rest = text.partition("\n")
        if sys.prefix not in first and sys.prefix not in rest[:400]:
            continue  # not a script of the image's interpreter
        # `#!/opt/venv/bin/python`, `python3`, `python3.11`, or pip's `exec` trampoline for long paths
        interpreter = re.compile(re.escape(os.path.join(src_bin, "python")) + r"[0-9.]*")
        first = interpreter.sub(py, first)
        rest = interpreter.sub(py, rest[:400]) + rest[400:]
        with open(dst, "w") as f:
            f.write(first + "\n" + rest)
        os.chmod(dst, 0o755)
        copied += 1
    return copied


def make_venv(path):
    """The job's venv (once: an init container that restarts finds it made)."""
    py = os.path.join(path, "bin", "python")
    if os.path.exists(py):
        return py
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    site_dir = venv_site_dir(path)
    os.makedirs(site_dir, exist_ok=True)
    lines = [f"import site; site.addsitedir({d!r})" for d in image_site_dirs()]
    with open(os.path.join(site_dir, "_lab_image.pth"), "w") as f:
        f.write("\n".join(lines) + "\n")
    copy_scripts(os.path.join(path, "bin"))
    if os.environ.get("LAB_NO_BUILD_ISOLATION") == "1":
        # the image has the project's build requirements: the README's own `pip install -e .` in the command builds
        # with them too, fetching nothing (the venv's pip.conf; pip reads a `no-` option's `false` as "on")
        with open(os.path.join(path, "pip.conf"), "w") as f:
            f.write("[install]\nno-build-isolation = false\n")
    probe = subprocess.run([py, "-c", "import pip"], capture_output=True)
    if probe.returncode != 0:  # the image has no pip: the interpreter's bundled one, offline
        subprocess.run([py, "-m", "ensurepip", "--default-pip"], check=True, stdout=subprocess.DEVNULL)
    return py


def main():
    started = time.monotonic()
    path = os.environ["LAB_VENV"]
    code = os.environ.get("LAB_CODE_DIR") or os.getcwd()
    installs = json.loads(os.environ.get("LAB_INSTALL") or "[]")
    try:
        py = make_venv(path)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"lab: deps: cannot make the job's venv in {path}: {e}") from None
    for args in installs:
        cmd = [py, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location"]
        if os.environ.get("LAB_NO_BUILD_ISOLATION") == "1":
            cmd.append("--no-build-isolation")
        print(f"lab: deps: pip install {' '.join(args)}", flush=True)
        rc = subprocess.run(cmd + list(args), cwd=code).returncode
        if rc != 0:
            print(f"lab: deps: pip install {' '.join(args)} failed (exit {rc}); the job's command did not run",
                  file=sys.stderr, flush=True)  # fmt: skip
            sys.exit(rc)
    took = time.monotonic() - started
    print(f"lab: deps: venv {path} (the image's packages visible), {len(installs)} installs in {took:.1f} s")


try:
    main()
except SystemExit as e:
    if isinstance(e.code, str):
        print(e.code, file=sys.stderr)
        sys.exit(1)
    raise
