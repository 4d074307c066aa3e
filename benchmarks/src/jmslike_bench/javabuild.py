"""The Java project of the checkout (``tests/interop/java``): its jar, built once.

Shared by the interop tests (``tests/interop/javapeer.py``) and ``jmslike bench``: one
``mvn package`` unless the jar next to a hash of the pom and the sources is up to date,
under a file lock so that two processes of one checkout never build at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import shutil
import subprocess
import time
from pathlib import Path

__all__ = ["BUILD_TIMEOUT", "JAVA_DIR", "JavaBuildError", "build_jar"]

log = logging.getLogger("jmslike.bench.java")

JAVA_DIR = Path(__file__).resolve().parents[3] / "tests" / "interop" / "java"
"""Where the Java project is in a source checkout (an installed wheel has none)."""
BUILD_TIMEOUT = 900.0
"""Seconds for a cold build: Maven downloads the three clients and the shade plugin."""


class JavaBuildError(RuntimeError):
    """Maven or the project is missing, or the build failed (the message has its output)."""


def _sources_hash(java_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted([java_dir / "pom.xml", *(java_dir / "src").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(java_dir)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build_jar(java_dir: Path = JAVA_DIR) -> Path:
    """The shaded jar (``target/interop.jar``), built with ``mvn package`` if needed."""
    if not (java_dir / "pom.xml").exists():
        raise JavaBuildError(f"no Java project at {java_dir} (a source checkout has one)")
    wanted = _sources_hash(java_dir)
    jar = java_dir / "target" / "interop.jar"
    stamp = java_dir / "target" / "interop.jar.sources-sha256"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with (jar.parent / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if jar.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
            return jar
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JavaBuildError("mvn is not installed: the Java side needs Maven and Java 17")
        started = time.monotonic()
        try:
            done = subprocess.run(
                [mvn, "-B", "-q", "package"],
                cwd=java_dir,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise JavaBuildError(
                f"mvn package took over {BUILD_TIMEOUT:.0f} s:\n{exc.stdout!r}"
            ) from None
        if done.returncode != 0 or not jar.exists():
            raise JavaBuildError(
                f"mvn package failed ({done.returncode}) in {java_dir}:\n"
                f"{(done.stdout + done.stderr)[-8000:]}"
            )
        stamp.write_text(wanted + "\n")
        log.info("built %s in %.1f s", jar, time.monotonic() - started)
        return jar
