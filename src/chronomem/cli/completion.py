"""``chronomem completion bash|zsh``: a shell completion script generated from the parser itself
(commands, sub-actions, flags and the choices of flags such as ``--kind``), so it cannot drift
from the CLI. zsh loads the bash function through ``bashcompinit``, which runs it in sh
emulation (0-based arrays), as bash would."""

from __future__ import annotations

import argparse
import shlex

__all__ = ["completion_script"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(s for a in parser._actions for s in a.option_strings if s.startswith("--"))


def _choices(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    return {
        s: [str(c) for c in a.choices]
        for a in parser._actions
        if a.choices and a.option_strings
        for s in a.option_strings
    }


def _words(items: list[str]) -> str:
    return shlex.quote(" ".join(items))


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (``bash`` or ``zsh``)."""
    commands = _subparsers(parser)
    cases, values = [], []
    for name, command in sorted(commands.items()):
        actions = _subparsers(command)
        flags = set(_flags(command))
        choices = _choices(command)
        for sub in actions.values():
            flags |= set(_flags(sub))
            choices |= _choices(sub)
        positional = [a.choices for a in command._actions if not a.option_strings and a.choices]
        first = sorted(actions) or [str(c) for group in positional for c in group]
        cases.append(f"    {name}) first={_words(first)}; opts={_words(sorted(flags))} ;;")
        values += [f'    "{name} {flag}") vals={_words(v)} ;;' for flag, v in choices.items()]
    body = f"""# chronomem {shell} completion: eval "$(chronomem completion {shell})"
_chronomem() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  local cmd="${{COMP_WORDS[1]}}" first="" opts="" vals=""
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W {_words([*sorted(commands), "--help", "--version"])} -- "$cur"))
    return
  fi
  case "$cmd" in
{chr(10).join(cases)}
  esac
  case "$cmd $prev" in
{chr(10).join(values)}
  esac
  if [[ -n "$vals" ]]; then
    COMPREPLY=($(compgen -W "$vals" -- "$cur"))
  elif [[ $COMP_CWORD -eq 2 && "$cur" != -* && -n "$first" ]]; then
    COMPREPLY=($(compgen -W "$first" -- "$cur"))
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
  fi
}}
complete -o default -F _chronomem chronomem
"""
    if shell == "zsh":
        return (
            "autoload -U +X compinit && compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + body
        )
    return body
