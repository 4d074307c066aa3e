"""Type checkers see the installed jmslike, all three of its package roots.

jmslike's packages live in three directories (``jmslike`` at the top, ``providers/``,
``plugins/``); setuptools' default editable install finds them with an import hook, which
mypy does not run, so an application type-checked against an editable jmslike saw
"Cannot find implementation or library stub" for every jmslike module. scripts/test.sh
installs with ``editable_mode=strict`` (a plain .pth to a link tree); a wheel install is
plain site-packages. This runs mypy as an application would, outside the repository and
with no PYTHONPATH, against the interpreter running the tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = """\
from jmslike import ConnectionFactory, Connection
import jmslike_stomp
import jmslike_amqp
import jmslike_otel

connection: Connection = ConnectionFactory("embedded://").create_connection()
wrong: int = ConnectionFactory("embedded://")
"""


def test_mypy_sees_every_package_root_of_the_installed_jmslike(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is a dev dependency")  # (installed by test.sh)
    (tmp_path / "app.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--python-executable",
            sys.executable,
            "app.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout + result.stderr
    assert "import-not-found" not in out and "Cannot find" not in out, out
    # The one error planted, found: mypy read jmslike's types (py.typed), not Any.
    assert (
        'app.py:7: error: Incompatible types in assignment (expression has type "ConnectionFactory"'
        in out
    ), out
