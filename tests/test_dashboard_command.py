"""``powermodel dashboard`` (issue 28): the server ``python app.py`` runs, from the installed
command, refusing what it cannot serve in one line. (The wheel in a fresh venv serving the
reference over HTTP: tests/test_package.py.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from powermodel.cli.parser import _parser
from powermodel.webapp.serve import dashboard_parser

ROOT = Path(__file__).resolve().parents[1]


def _dashboard(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """``python -m powermodel.cli dashboard ARGV``, its temporary folders in ``tmp_path``."""
    return subprocess.run(
        [sys.executable, "-m", "powermodel.cli", "dashboard", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)},
        timeout=120,
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["no-such-preset"], "unknown preset 'no-such-preset': the dashboard opens on one of "),
        (["site.toml"], "the dashboard opens on a preset, not a file (site.toml): start it on"),
        (["--port", "99999"], "--port 99999 is not a port: give one from 1 to 65535"),
        (["--cache-gb", "0"], "--cache-gb and --upload-mb must be positive"),
        (["--set", "simulation.duration=xx"], "simulation.duration: cannot read 'xx' as a"),
    ],
)
def test_what_the_dashboard_cannot_open_is_one_line(tmp_path, argv, said):
    (tmp_path / "site.toml").write_text('extends = "llama3-405b-16k-h100"\n')
    done = _dashboard(tmp_path, *argv)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"powermodel: error: {said}"), line
    assert list(tmp_path.glob("powermodel-dashboard-*")) == []


def test_a_taken_port_is_one_line_and_leaves_no_working_folder(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _dashboard(tmp_path, "--port", str(port), "--set", "simulation.duration=1h")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line == (
        f"powermodel: error: cannot serve on 127.0.0.1:{port}: Address already in use: choose "
        "another --port (or stop what listens there)"
    )
    assert list(tmp_path.glob("powermodel-dashboard-*")) == []


def test_the_command_and_app_py_take_the_same_options(capsys):
    # one declaration (powermodel.webapp.serve.add_arguments) for both: app.py names the
    # opening preset --preset, the command takes it as its argument
    app = subprocess.run(
        [sys.executable, "app.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert app.returncode == 0
    command = dashboard_parser()
    options = {o for a in command._actions for o in a.option_strings}
    assert options == {"-h", "--help", "--host", "--port", "--debug", "--set", "--cache-gb",
                       "--simulations", "--upload-mb", "--threads"}  # fmt: skip
    assert all(o in app.stdout for o in options) and "--preset" in app.stdout
    assert command.parse_args([]).scenario == "llama3-405b-16k-h100"
    # the command line's own parser imports no web stack to list it, and its help is the
    # server's (what the reference's page shows)
    with pytest.raises(SystemExit) as shown:
        from powermodel.cli import main

        main(["dashboard", "--help"])
    assert shown.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: powermodel dashboard [-h] [--host HOST] [--port PORT]")
    (sub,) = (a for a in _parser()._actions if a.dest == "command")
    assert sub.choices["dashboard"].format_help() == command.format_help()
