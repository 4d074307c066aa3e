"""No two test modules share a file name: pytest imports each by its base name (the
``tests`` folders are not packages), so a second ``test_x.py`` stops the whole run at
collection ("import file mismatch"). It happened once: a unit test and an integration
test of the same feature, which CI found only after an hour's run."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_name_of_its_own() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        seen[path.name].append(str(path.relative_to(TESTS)))
    assert len(seen) > 50, f"found only {len(seen)} test modules under {TESTS}"
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a name (rename one of each): {clashes}"
