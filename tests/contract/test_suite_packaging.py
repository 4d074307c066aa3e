"""The contract suite as shipped in jmslike.testing (docs/plugins.md, "Testing your
provider"): it stays free of this repository's provider cases, the repository's
KNOWN_BUGS still name scenarios that exist, and runtime code never needs pytest."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import jmslike
import jmslike.testing.suite


@pytest.fixture
def contract_conftest(request: pytest.FixtureRequest) -> ModuleType:
    """tests/contract/conftest.py as pytest loaded it (``import conftest`` could give
    another directory's conftest: they share the module name)."""
    path = Path(__file__).with_name("conftest.py").resolve()
    for plugin in request.config.pluginmanager.get_plugins():
        if isinstance(plugin, ModuleType) and Path(plugin.__file__ or "").resolve() == path:
            return plugin
    raise AssertionError(f"{path} is not loaded")


def test_known_bugs_name_existing_scenarios(contract_conftest: ModuleType) -> None:
    """A renamed or removed scenario would leave its KNOWN_BUGS entry silently unused."""
    assert contract_conftest.KNOWN_BUGS
    for key in contract_conftest.KNOWN_BUGS:
        module_name, _, function = key.partition("::")
        module = importlib.import_module(f"jmslike.testing.suite.{module_name}")
        assert callable(getattr(module, function, None)), f"KNOWN_BUGS {key!r}: no such test"


def test_shipped_suite_names_no_repository_case(contract_conftest: ModuleType) -> None:
    """Known failures per case live in tests/contract/conftest.py, not in the package."""
    suite_dir = Path(jmslike.testing.suite.__file__).parent
    modules = [info.name for info in pkgutil.iter_modules([str(suite_dir)])]
    assert len(modules) >= 7, modules
    case_ids = [case.id for case in contract_conftest.PROVIDER_CASES if "-" in case.id]
    for path in suite_dir.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "known_bug" not in text, path.name
        named = [case_id for case_id in case_ids if f'"{case_id}"' in text]
        assert not named, f"{path.name} names repository cases {named}"


def test_runtime_imports_without_pytest() -> None:
    """pytest is an optional dependency (the ``testing`` extra): importing jmslike, its
    providers, plugins and jmslike.testing's non-plugin modules must not import it."""
    here = str(Path(jmslike.__file__).resolve().parents[1])
    script = (
        "import sys\n"
        f"sys.path[:0] = [{here!r}, {here + '/providers'!r}, {here + '/plugins'!r}]\n"
        "import jmslike, jmslike.embedded, jmslike_stomp, jmslike_amqp, jmslike_otel\n"
        "import jmslike.testing.cases, jmslike.testing.helpers, jmslike.testing.ordercheck\n"
        "from jmslike.spi import get_registry\n"
        "get_registry().schemes()\n"
        "print('PYTEST' if 'pytest' in sys.modules else 'CLEAN')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CLEAN"]


def test_suite_without_url_says_which_option(tmp_path: Path) -> None:
    """jmslike.testing.plugin: run without ``--jmslike-url`` (and no conftest overriding
    ``provider_case``), a scenario errors naming the option rather than guessing a broker."""
    here = str(Path(jmslike.__file__).resolve().parents[1])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "jmslike.testing.plugin",
            "--pyargs",
            "jmslike.testing.suite.test_messaging",
            "-k",
            "test_topic_copies_are_independent",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": here},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 error" in proc.stdout
    assert "SuiteOptionError" in proc.stdout and "--jmslike-url" in proc.stdout
