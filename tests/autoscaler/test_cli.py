"""The `autoscaler` command's argument errors: one line on stderr and exit status 2 for every subcommand."""

from __future__ import annotations

import pytest

from autoscaler.cli import main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "autoscaler: the following arguments are required: COMMAND (see --help)"),
        (["fly"], "autoscaler: argument COMMAND: invalid choice: 'fly'"),
        (["run", "--bogus"], "autoscaler: unrecognized arguments: --bogus (see --help)"),
        (["plan"], "autoscaler plan: the following arguments are required: snapshot (see --help)"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line)
