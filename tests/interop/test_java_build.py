"""The Java peer's build: cached by the hash of its sources, and loud when it breaks.

A broken Java build must fail the interop tests with Maven's output, never skip them or
run them against a stale jar (issue 5, item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from javapeer import JAVA_DIR, build_jar

pytestmark = pytest.mark.java


def test_built_jar_is_reused_until_a_source_changes(java_jar: Path) -> None:
    """A second build with unchanged sources is the cached jar, not a new mvn run."""
    before = java_jar.stat().st_mtime_ns
    assert build_jar() == java_jar
    assert java_jar.stat().st_mtime_ns == before


def test_broken_java_source_fails_with_maven_output(tmp_path: Path) -> None:
    """A compile error surfaces as a test failure that quotes javac's message."""
    copy = tmp_path / "java"
    copy.mkdir()
    shutil.copy(JAVA_DIR / "pom.xml", copy / "pom.xml")
    shutil.copytree(JAVA_DIR / "src", copy / "src")
    source = copy / "src" / "main" / "java" / "jmslike" / "interop" / "Interop.java"
    source.write_text(source.read_text().replace("private Interop() {}", "private Interop() {"))
    with pytest.raises(pytest.fail.Exception) as failed:
        build_jar(copy)
    assert "mvn package failed" in str(failed.value)
    assert "Interop.java" in str(failed.value)
