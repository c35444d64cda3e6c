"""Shell completion for an argparse command (``lab completion bash``, ``autoscaler completion zsh``): the script is
generated from the parser itself, so it names exactly the subcommands and options the command has.

bash: ``source <(lab completion bash)`` (or write it to ``~/.local/share/bash-completion/completions/lab``); zsh:
``source <(lab completion zsh)`` (bash's ``complete`` through ``bashcompinit``). The script completes the
subcommands at each level, then that subcommand's options, then file names.
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh")


def _tree(parser: argparse.ArgumentParser, path: str, out: dict[str, tuple[list[str], list[str]]]) -> None:
    subs: list[str] = []
    opts: list[str] = []
    for action in parser._actions:  # argparse's own record of what it accepts
        opts += [o for o in action.option_strings if o.startswith("--") or len(action.option_strings) == 1]
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                subs.append(name)
                _tree(child, f"{path} {name}".strip(), out)
    out[path] = (sorted(subs), sorted(set(opts)))


def script(parser: argparse.ArgumentParser, prog: str, shell: str) -> str:
    if shell not in SHELLS:
        raise ValueError(shell)
    tree: dict[str, tuple[list[str], list[str]]] = {}
    _tree(parser, "", tree)
    fn = f"_{prog.replace('-', '_')}_complete"
    cases = "".join(
        f'    "{path}") subs="{" ".join(subs)}"; opts="{" ".join(opts)}" ;;\n'
        for path, (subs, opts) in sorted(tree.items())
    )
    body = f"""# {prog} completion ({shell}), generated from {prog}'s own parser: source <({prog} completion {shell})
{fn}() {{
  local cur path="" w i subs opts
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    [[ $w == -* ]] && continue
    case "${{path:+$path }}$w" in
{"".join(f'      "{p}") path="{p}" ;;{chr(10)}' for p in sorted(tree) if p)}    esac
  done
  case "$path" in
{cases}  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n $subs ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F {fn} {prog}
"""
    if shell == "zsh":
        body = "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body
