"""The ``autoscaler`` command: one subcommand per module of ``autoscaler.commands`` (``COMMANDS``).

Each module has ``register(subparsers)``, which adds its parser and sets ``func`` (args -> exit status). Bad
input is reported as one line per problem on stderr with exit status 2, never a traceback: any exception that
carries ``lines`` (and optionally ``exit_code``) is treated as a user error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from autoscaler.commands import COMMANDS


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse prints the usage and then the error; this prints one line (``--help`` shows the usage).

    Subparsers are made of the same class, so every subcommand reports bad arguments the same way."""

    def error(self, message: str):
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="autoscaler", description="Batch-optimized Kubernetes autoscaler for the research cluster."
    )
    parser.add_argument("--version", action="version", version=f"autoscaler {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"autoscaler.commands.{name}").register(sub)
    comp = sub.add_parser("completion", help="shell completion: source <(autoscaler completion bash)")
    comp.add_argument("shell", choices=["bash", "zsh"])
    comp.set_defaults(func=lambda args: _completion(args))
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gpu-research-cluster")
    except metadata.PackageNotFoundError:
        return "unknown"


def _completion(args) -> int:
    from clusterspec.completion import script

    print(script(build_parser(), "autoscaler", args.shell), end="")
    return 0


def main(argv: list[str] | None = None, *, process: bool = False) -> int:
    """Run one command; ``process``: this is the whole process (``python -m autoscaler``, the console script),
    so a one-shot command may end it at once when done (``autoscaler plan``, ``autoscaler.commands.exit.exit_now``)."""
    args = build_parser().parse_args(argv)
    args.process = process
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        lines = getattr(e, "lines", None)
        if not isinstance(lines, list):
            raise
        for line in lines:
            print(line, file=sys.stderr)
        return int(getattr(e, "exit_code", 2))


def console() -> int:
    """The ``autoscaler`` console script: :func:`main` as the whole process."""
    return main(process=True)
