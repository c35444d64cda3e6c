"""Glue for invoke tasks: user errors become one line each on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from invoke.exceptions import Exit

from clusterspec.errors import UserError

HELP = ("--help", "-h")


def _help_instead(values) -> None:
    """invoke fills a task's positional arguments first, so `invoke remove-user --help` would pass "--help" as the
    user's name: show the task's help instead (and do nothing else)."""
    if not any(isinstance(v, str) and v in HELP for v in values):
        return
    argv = sys.argv
    at = next((i for i, a in enumerate(argv) if a in HELP), len(argv))
    task = next((a for a in reversed(argv[1:at]) if not a.startswith("-")), None)
    import subprocess

    done = subprocess.run([argv[0], "--help", *([task] if task else [])], check=False)
    raise Exit(code=done.returncode)


def no_h_shortflag(namespace: dict) -> None:
    """`-h` means help everywhere: a task whose options would take `-h` as a short flag (--home, --ssh-from after
    --spec took -s) gets no automatic short flags (invoke's auto_shortflags), so `invoke TASK -h` is its help."""
    from invoke import Task

    for obj in namespace.values():
        if not isinstance(obj, Task):
            continue
        kept = dict(
            obj.help
        )  # get_arguments() pops each option's help text: without this, --help showed none
        _letter_shortflags(obj)
        if any("h" in a.names for a in obj.get_arguments()):
            obj.auto_shortflags = False
        obj.help = kept


def _letter_shortflags(task) -> None:
    """invoke takes an option's first character not yet taken as its short flag, dashes included: once l, o, n
    and e were taken, --lone-pod-idle got "-" (shown as ``--=STRING``). Dashes are skipped here."""
    original = task.arg_opts

    def arg_opts(name, default, taken_names):
        return original(name, default, {*taken_names, "-"})

    task.arg_opts = arg_opts


def user_errors(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _help_instead([*args[1:], *kwargs.values()])
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            for line in e.lines:
                print(line, file=sys.stderr)
            raise Exit(code=e.exit_code) from None
        except Exception as e:
            import urllib3

            if not isinstance(e, urllib3.exceptions.HTTPError):
                raise
            # the Kubernetes API (or another HTTP endpoint) does not answer: one line, not urllib3's traceback
            reason = getattr(e, "reason", None) or e
            detail = str(reason).split(": ", 1)[-1].rstrip(")\"'")
            print(f"the Kubernetes API does not answer ({type(reason).__name__}: {detail}); check the kubeconfig's "
                  "server and that you can reach it (the VPN, the control plane's address)", file=sys.stderr)  # fmt: skip
            raise Exit(code=1) from None
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise Exit(code=130) from None

    return wrapper


def number(value: str | None, flag: str, what: str, kind: type = float, positive: bool = True):
    """A numeric option from the command line, or None; one line naming the option and what is expected."""
    if value is None or value == "":
        return None
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise UserError(f"{flag} {value!r}: give {what}") from None
    if positive and out <= 0:
        raise UserError(f"{flag} {value!r}: give {what} (more than 0)")
    return out


def print_json(result: Callable[[], dict]) -> None:
    """``--json``: the task's result as one JSON object on stdout, ``{"ok": true, ...}``; bad input or problems as
    ``{"ok": false, "problems": [lines]}`` with the same exit status as without ``--json`` (2), nothing on stderr."""
    import json

    code = 0
    try:
        data = result()
        code = 0 if data.get("ok", True) else UserError.exit_code
    except UserError as e:
        data, code = {"ok": False, "problems": e.lines}, e.exit_code
    print(json.dumps(data, indent=2))
    if code:
        raise Exit(code=code)
