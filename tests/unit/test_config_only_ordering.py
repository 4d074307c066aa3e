"""Issue 6's proof: an existing program gains ordering with no code change (ORD-6).

``examples/config_only_ordering.py`` is plain JMS: competing consumers, one session and
producer per customer, and not a single ordering call. It runs here as a subprocess,
unmodified, once as it is and once with ordering switched on from outside (a config
file, ./jmslike.toml, an environment variable, a destination's unit of order), and the
output shows the difference. Only the ordered runs are held to a number (no cancel
overtakes its order): how many overtake without ordering depends on thread timing.
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import jmslike.connection
import jmslike.session

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "config_only_ordering.py"
SHIPPED_CONFIG = ROOT / "examples" / "ordering.toml"
CUSTOMERS = 24

# The factory reads the sources once jmslike.connection calls jmslike.config's
# resolve_settings, and destination-level unit of order once Session.create_producer asks
# settings.unit_of_order_for(); until then these runs cannot be ordered.
needs_factory_wiring = pytest.mark.skipif(
    "resolve_settings" not in inspect.getsource(jmslike.connection),
    reason="jmslike/connection.py does not call jmslike.config.resolve_settings yet",
)
needs_session_wiring = pytest.mark.skipif(
    "unit_of_order_for" not in inspect.getsource(jmslike.session),
    reason="Session.create_producer does not ask settings.unit_of_order_for() yet",
)

ORDERED = "mode: ordered by configuration"
PLAIN = "mode: plain JMS (0 of 48 messages in ordering groups)"
NO_OVERTAKES = f"cancels that overtook their order: 0 of {CUSTOMERS}"


def run_example(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The example as a user runs it: a fresh interpreter, no JMSLIKE_ variable but
    ``env``, in ``cwd`` (where a ./jmslike.toml would be found)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JMSLIKE_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), clean.get("PYTHONPATH")]))
    clean.update(env)
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def output(cwd: Path, **env: str) -> str:
    proc = run_example(cwd, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def assert_ordered(stdout: str) -> None:
    lines = stdout.splitlines()
    assert lines[0].startswith(ORDERED), stdout
    assert NO_OVERTAKES in lines, stdout


def test_the_example_is_plain_jms() -> None:
    """The program under test must not ask for ordering in any way: no ordering call,
    no group property, no setting in its URL or keyword arguments."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    forbidden = {
        "enable_ordering_group",
        "set_unit_of_order",
        "disable_ordering_group",
        "default_ordering_group_name",
        "unit_of_order_destinations",
        "strictly_ordered",
        "from_config",
    }
    docstring = ast.get_docstring(tree, clean=False)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr not in forbidden, node.attr
        if isinstance(node, ast.keyword):
            assert node.arg not in forbidden, node.arg
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value == docstring:
                continue
            assert "JMSXGroup" not in node.value
            assert "?" not in node.value or "://" not in node.value, node.value
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "ConnectionFactory"
        ):
            assert not node.keywords
            assert [ast.literal_eval(a) for a in node.args] == ["embedded://"]


def test_without_configuration_it_runs_plain_jms(tmp_path: Path) -> None:
    stdout = output(tmp_path)
    assert stdout.splitlines()[0] == PLAIN, stdout
    assert "cancels that overtook their order: " in stdout


@needs_factory_wiring
def test_same_program_with_and_without_a_config_file(tmp_path: Path) -> None:
    """The issue's test: one unmodified program, run without and with the file."""
    config = tmp_path / "ordering.toml"
    config.write_text("[defaults]\nenable_ordering_group = true\n", encoding="utf-8")
    plain = output(tmp_path)
    ordered = output(tmp_path, JMSLIKE_CONFIG=str(config))
    assert plain.splitlines()[0] == PLAIN, plain
    assert_ordered(ordered)
    assert plain != ordered


@needs_factory_wiring
def test_a_jmslike_toml_in_the_working_directory_is_enough(tmp_path: Path) -> None:
    (tmp_path / "jmslike.toml").write_text(
        "[defaults]\nenableOrderingGroup = true\n", encoding="utf-8"
    )
    assert_ordered(output(tmp_path))


@needs_factory_wiring
def test_an_environment_variable_is_enough(tmp_path: Path) -> None:
    assert_ordered(output(tmp_path, JMSLIKE_ENABLE_ORDERING_GROUP="true"))


@needs_factory_wiring
def test_the_shipped_example_config(tmp_path: Path) -> None:
    assert_ordered(output(tmp_path, JMSLIKE_CONFIG=str(SHIPPED_CONFIG)))


@needs_factory_wiring
def test_one_fixed_group_for_everyone_is_ordered_too(tmp_path: Path) -> None:
    """default_ordering_group_name puts every customer in one group: slower, still right."""
    assert_ordered(
        output(
            tmp_path,
            JMSLIKE_ENABLE_ORDERING_GROUP="1",
            JMSLIKE_DEFAULT_ORDERING_GROUP_NAME="all-customers",
        )
    )


@needs_factory_wiring
@needs_session_wiring
def test_destination_level_unit_of_order(tmp_path: Path) -> None:
    """WebLogic's way: the queue, not the factory, asks for a unit of order per session."""
    config = tmp_path / "jmslike.toml"
    config.write_text(
        '[destinations."queue://shop-orders"]\nunit_of_order = "session"\n', encoding="utf-8"
    )
    assert_ordered(output(tmp_path, JMSLIKE_CONFIG=str(config)))
    other = tmp_path / "other.toml"
    other.write_text(
        '[destinations."queue://some-other-queue"]\nunit_of_order = "session"\n',
        encoding="utf-8",
    )
    assert output(tmp_path, JMSLIKE_CONFIG=str(other)).splitlines()[0] == PLAIN


@needs_factory_wiring
def test_a_broken_config_stops_the_program_before_it_sends(tmp_path: Path) -> None:
    """A typo must never leave ordering silently off: the program fails, naming it."""
    config = tmp_path / "jmslike.toml"
    config.write_text("[defaults]\nenable_ordering_grup = true\n", encoding="utf-8")
    proc = run_example(tmp_path, JMSLIKE_CONFIG=str(config))
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert f"unknown setting 'enable_ordering_grup' in {config}:2 [defaults]" in proc.stderr
