"""Shell completion generated from the commands' own parsers (clusterspec/completion.py), run in a real bash: the
subcommands at each level, the chosen subcommand's options; `--version` for `lab` and `autoscaler`."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support import ROOT


def _complete(prog: str, words: list[str]) -> list[str]:
    script = subprocess.run([sys.executable, "-c", f"import sys; from {'labctl.cli' if prog == 'lab' else 'autoscaler.cli'} "
                             f"import main; sys.argv = ['{prog}', 'completion', 'bash']; main()"],
                            capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    line = " ".join(f"'{w}'" for w in [prog, *words])
    probe = f'{script.stdout}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _{prog}_complete; echo "${{COMPREPLY[@]}}"'
    return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
@pytest.mark.parametrize(
    ("prog", "words", "want"),
    [("lab", ["s"], ["ssh-config", "status", "submit"]), ("lab", ["submit", "--ke"], ["--keep"]),
     ("lab", ["image", "b"], ["build"]), ("lab", ["status", "--o"], ["--output"]),
     ("autoscaler", ["run", "--cluster-n"], ["--cluster-name"]), ("autoscaler", ["compl"], ["completion"])],
)  # fmt: skip
def test_bash_completes_subcommands_and_options(prog: str, words: list[str], want: list[str]) -> None:
    assert _complete(prog, [*words[:-1], words[-1]]) == want


@pytest.mark.parametrize("module", ["labctl.cli", "autoscaler.cli"])
def test_version(module: str) -> None:
    prog = "lab" if module == "labctl.cli" else "autoscaler"
    done = subprocess.run([sys.executable, "-c", f"import sys; from {module} import main; sys.argv = ['{prog}', "
                           "'--version']; main()"], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith(f"{prog} ") and done.stdout.split()[1][0].isdigit()
