"""The SSH machines' idle stop (terraform/modules/ssh_machines/scripts/idle_stop.sh), run with bash against fakes
of ss, nvidia-smi and systemctl: busy is an SSH connection, a GPU process or utilisation, or CPU load; the machine
powers off only after IDLE_MIN minutes without any, counted from boot at the earliest."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, require_tool

SCRIPT = MODULES / "ssh_machines/scripts/idle_stop.sh"


def _fakes(tmp_path, ssh=0, gpu_procs=0, gpu_util=0, gpu=True):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    conns = "\\n".join("0 0 10.0.0.5:22 10.20.0.7:5555" for _ in range(ssh))
    (bin_dir / "ss").write_text(f"#!/bin/sh\nprintf '{conns}{chr(92)}n' | grep . || true\n")
    if gpu:
        procs = "\\n".join(str(100 + i) for i in range(gpu_procs))
        (bin_dir / "nvidia-smi").write_text(
            '#!/bin/sh\ncase "$1" in\n'
            f"  --query-compute-apps=*) printf '{procs}' ;;\n"
            f"  --query-gpu=*) printf '{gpu_util}\\n0\\n' ;;\nesac\n"
        )
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/systemctl.calls\n')
    (bin_dir / "logger").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


def _run(tmp_path, bin_dir, load="0.05", uptime_s=86400, last_busy_ago_min=None, idle_min=60):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    if last_busy_ago_min is not None:
        (state / "last-busy").write_text(str(int(time.time()) - 60 * last_busy_ago_min))
    (tmp_path / "loadavg").write_text(f"0.01 {load} 0.01 1/100 1234\n")
    (tmp_path / "uptime").write_text(f"{uptime_s}.00 1.00\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "IDLE_MIN": str(idle_min), "IDLE_STATE": str(state),
           "LOADAVG": str(tmp_path / "loadavg"), "UPTIME": str(tmp_path / "uptime")}  # fmt: skip
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    calls = tmp_path / "systemctl.calls"
    return done.stdout.strip(), calls.read_text().split() if calls.exists() else []


def test_the_script_is_shellcheck_clean():
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    done = subprocess.run([shellcheck, "-S", "style", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    "fakes,load,said",
    [
        ({"ssh": 2}, "0.05", "busy: 2 SSH connection(s)"),
        ({"gpu_procs": 1}, "0.05", "busy: 1 GPU process(es)"),
        ({"gpu_util": 37}, "0.05", "busy: GPU utilisation above 5%"),
        ({"gpu": False}, "3.50", "busy: load average 3.50"),
    ],
    ids=["an SSH session", "a GPU process", "GPU utilisation", "a CPU job without a session"],
)
def test_any_use_keeps_the_machine_running_and_restarts_the_clock(tmp_path, fakes, load, said):
    out, calls = _run(tmp_path, _fakes(tmp_path, **fakes), load=load, last_busy_ago_min=500)
    assert out == said and calls == []
    assert abs(int((tmp_path / "state/last-busy").read_text()) - time.time()) < 5


def test_idle_past_the_limit_powers_off(tmp_path):
    out, calls = _run(tmp_path, _fakes(tmp_path), last_busy_ago_min=61)
    assert out.startswith("idle for 61 min (limit 60): powering off") and calls == ["poweroff"]


def test_idle_within_the_limit_waits(tmp_path):
    out, calls = _run(tmp_path, _fakes(tmp_path), last_busy_ago_min=20)
    assert out == "idle for 20 min (limit 60)" and calls == []


def test_a_machine_just_started_is_not_stopped_for_the_idle_time_before_it_stopped(tmp_path):
    """`invoke ssh-start` after a stop: last-busy is from before the stop; the clock restarts at boot."""
    out, calls = _run(tmp_path, _fakes(tmp_path), uptime_s=300, last_busy_ago_min=2000)
    assert out == "idle for 5 min (limit 60)" and calls == []
