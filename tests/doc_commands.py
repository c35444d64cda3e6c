"""The commands the README and the docs show, as the reader sees them (issue 16: "works from a fresh clone,
exactly as written").

``extract()`` finds every command: the lines of shell code blocks (fenced ``sh``/``shell``/``console`` or
unlabelled) that start with a command this repository provides or documents, continuation lines joined and
trailing comments dropped, and the backticked commands of the README's tables. A command with a placeholder
(``[--flag X]``, ``PATH``, ``R``, ``...``) is a *synopsis*: its flags are checked against the command's own
``--help``. Every other command is *literal* and must be listed in ``tests/doc_commands.yaml`` with how the test
treats it: run it (``fast`` in ``make test``, ``slow`` in ``make docs-check``) or skip it with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", "docs/*.md", "chef/cookbooks/cluster_node/README.md", "terraform/modules/*/README.md"]
SHELL_LANGS = {"", "sh", "shell", "bash", "console"}
TOOLS = {
    "make",
    "invoke",
    "autoscaler",
    "python",
    "kubectl",
    "docker",
    "terraform",
    "packer",
    "source",
    "lab",
}
ENV_ASSIGNMENT = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
PLACEHOLDER = re.compile(
    r"\[|\.\.\.|(?<![\w/.-])(?:[A-Z][A-Z0-9_]*[A-Z0-9](?:\.\w+)?|R|N)(?![\w/.-])|<[\w -]+>"
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class DocCommand:
    file: str
    line: int
    text: str

    @property
    def synopsis(self) -> bool:
        return bool(PLACEHOLDER.search(ENV_ASSIGNMENT.sub("", self.text)))

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _files() -> list[Path]:
    out: list[Path] = []
    for pattern in DOCS:
        out.extend(sorted(ROOT.glob(pattern)))
    return out


def _strip_comment(line: str) -> str:
    """``cmd --x  # a comment`` -> ``cmd --x``; a ``#`` inside quotes or a word is kept."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def is_command(line: str) -> bool:
    """A shell line that runs one of the tools (optionally after VAR=value assignments or from .venv/bin/)."""
    words = ENV_ASSIGNMENT.sub("", line).split()
    return bool(words) and (words[0] in TOOLS or words[0].startswith(".venv/bin/"))


def _block_commands(path: Path, text: str) -> list[DocCommand]:
    out: list[DocCommand] = []
    for fence in FENCE.finditer(text):
        if fence.group(1) not in SHELL_LANGS:
            continue
        first_line = text[: fence.start(2)].count("\n") + 1
        pending, start = "", 0
        for offset, raw in enumerate(fence.group(2).splitlines()):
            line = raw.strip()
            line = line[2:] if line.startswith("$ ") else line
            if not pending:
                if not is_command(line):
                    continue
                start = first_line + offset
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            command = _strip_comment(pending + line)
            pending = ""
            if command:
                out.append(DocCommand(str(path.relative_to(ROOT)), start, command))
    return out


def _inline_commands(path: Path, text: str) -> list[DocCommand]:
    """Backticked commands outside code blocks: the README's tables and prose (``invoke bench``, ``make tools``)."""
    out: list[DocCommand] = []
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for number, line in enumerate(outside.splitlines(), 1):
        cells = line.split("|")[1:2] if line.startswith("|") else [line]
        for code in re.findall(r"`([^`]+)`", cells[0]):
            words = code.split()
            if len(words) > 1 and is_command(code) and words[0] != "python":
                out.append(DocCommand(str(path.relative_to(ROOT)), number, code.strip()))
    return out


def extract() -> list[DocCommand]:
    out: list[DocCommand] = []
    for path in _files():
        text = path.read_text()
        out.extend(_block_commands(path, text))
        if path.name == "README.md" and path.parent == ROOT:
            out.extend(_inline_commands(path, text))
    return out


def flags(text: str) -> list[str]:
    """The long flags a command line names (``--json``, ``--region``; ``--x=1`` -> ``--x``); what follows a
    lone ``--`` is the command it runs (``lab submit ... -- torchrun --nnodes 2``), not its flags."""
    own = re.split(r"\s--(?:\s|$)", text, maxsplit=1)[0]
    return sorted({m for m in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w])", own)})


def subcommand(text: str) -> tuple[str, ...] | None:
    """``invoke up --region R`` -> ("invoke", "up"); ``autoscaler plan X`` -> ("autoscaler", "plan");
    ``lab image build`` -> ("lab", "image", "build")."""
    words = text.replace(".venv/bin/", "").split()
    if words[:3] == ["python", "-m", "autoscaler"]:
        words = ["autoscaler", *words[3:]]
    if len(words) >= 2 and words[0] in ("invoke", "autoscaler", "lab") and not words[1].startswith("-"):
        if words[:2] == ["lab", "image"] and len(words) > 2:
            return ("lab", "image", words[2])
        return words[0], words[1]
    return None
