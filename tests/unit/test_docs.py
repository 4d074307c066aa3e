"""The user documentation stays true: its code runs, its rules and links are all there.

* Every fenced ``python`` block in README.md, docs/*.md, providers/README.md and
  plugins/README.md runs as shown, each in a fresh interpreter (so every block gets a
  fresh ``embedded://`` broker), and must exit 0. A block whose first line is exactly
  ``# not run`` is skipped; that marker is for snippets that need a real broker.
* Where the prose right after a ``python`` block says "This prints" and a ``text`` block
  follows, the block's output must be exactly that text.
* docs/ordering.md has a heading or a bold label for every rule ORD-1..ORD-20 (and 8a).
* Every relative link in those files points to a file or folder that exists, and a
  ``#fragment`` into a Markdown file names one of its headings (GitHub's anchor rules).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    p
    for p in [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        ROOT / "providers" / "README.md",
        ROOT / "plugins" / "README.md",
    ]
    if p.exists()
)
SKIP_MARKER = "# not run"
BLOCK_TIMEOUT = 60.0

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[ \t]*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _blocks(path: Path) -> list[tuple[int, str, str]]:
    """(first line number, language, code) of every fenced block in ``path``."""
    return [(start, lang, code) for start, _end, lang, code in _spans(path)]


def _spans(path: Path) -> list[tuple[int, int, str, str]]:
    """(first line, closing fence line, language, code) of every fenced block."""
    found: list[tuple[int, int, str, str]] = []
    lang: str | None = None
    start = 0
    lines: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _FENCE.match(line)
        if lang is None:
            if match:
                lang, start, lines = match.group("lang").lower(), number + 1, []
        elif line.strip() == "```":
            found.append((start, number, lang, "\n".join(lines) + "\n"))
            lang = None
        else:
            lines.append(line)
    where = f"{path.relative_to(ROOT)}:{start - 1}"
    assert lang is None, f"{where}: a code block opens here and never closes"
    return found


def _python_blocks() -> list[Any]:
    params: list[Any] = []
    for path in DOCS:
        for line, lang, code in _blocks(path):
            if lang != "python":
                continue
            name = f"{path.relative_to(ROOT)}:{line}"
            skip = code.splitlines()[0].strip() == SKIP_MARKER if code.strip() else True
            marks = [pytest.mark.skip(reason="marked '# not run'")] if skip else []
            params.append(pytest.param(code, id=name, marks=marks))
    return params


def _printed_outputs() -> list[Any]:
    """(code, expected output) where prose saying "This prints" joins a python block to
    the ``text`` block after it."""
    params: list[Any] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8").splitlines()
        spans = _spans(path)
        for first, second in itertools.pairwise(spans):
            start, end, lang, code = first
            next_start, _end, next_lang, output = second
            between = "\n".join(text[end : next_start - 2])
            if lang == "python" and next_lang == "text" and "This prints" in between:
                name = f"{path.relative_to(ROOT)}:{start}"
                params.append(pytest.param(code, output, id=name))
    return params


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, as a reader would; fail on a hang."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JMSLIKE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    try:
        return subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = (
            exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        )
        pytest.fail(f"code block did not finish in {BLOCK_TIMEOUT} s:\n{code}\n{output or ''}")


def test_docs_exist() -> None:
    names = {str(p.relative_to(ROOT)) for p in DOCS}
    assert "README.md" in names
    assert "docs/ordering.md" in names
    assert _python_blocks(), "no python code blocks found in the docs"


@pytest.mark.parametrize("code", _python_blocks())
def test_python_block_runs(code: str, tmp_path: Path) -> None:
    result = _run(code, tmp_path)
    assert result.returncode == 0, (
        f"code block exited {result.returncode}\n--- code\n{code}\n--- stdout\n"
        f"{result.stdout}\n--- stderr\n{result.stderr}"
    )


def test_printed_outputs_found() -> None:
    """The configuration page's error example is checked word for word."""
    assert any("configuration.md" in p.id for p in _printed_outputs())


@pytest.mark.parametrize(("code", "expected"), _printed_outputs())
def test_printed_output_matches(code: str, expected: str, tmp_path: Path) -> None:
    result = _run(code, tmp_path)
    assert result.returncode == 0, f"code block exited {result.returncode}\n{result.stderr}"
    got = [line.rstrip() for line in result.stdout.splitlines()]
    assert got == [line.rstrip() for line in expected.splitlines()], (
        f"the text after 'This prints' is out of date; the block now prints:\n{result.stdout}"
    )


@pytest.mark.parametrize("rule", [*(str(n) for n in range(1, 21)), "8a"])
def test_every_ordering_rule_is_documented(rule: str) -> None:
    text = (ROOT / "docs" / "ordering.md").read_text(encoding="utf-8")
    label = rf"ORD-{re.escape(rule)}(?![0-9a-z])"
    heading = re.compile(rf"^#{{1,6}}\s.*\b{label}", re.MULTILINE)
    bold = re.compile(rf"\*\*[^*\n]*\b{label}[^*\n]*\*\*")
    assert heading.search(text) or bold.search(text), (
        f"docs/ordering.md has no heading or bold label for ORD-{rule}"
    )


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for the headings of a Markdown file."""
    anchors: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"^#{1,6}\s", line):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def _relative_links(path: Path) -> list[tuple[int, str]]:
    links = []
    in_code = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group("target")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, mailto:, ...
            links.append((number, target))
    return links


def _link_problem(path: Path, target: str) -> str | None:
    file_part, _, fragment = target.partition("#")
    linked = (path.parent / file_part) if file_part else path
    if not linked.exists():
        return "no such file"
    if fragment and linked.suffix == ".md" and fragment not in _anchors(linked):
        return f"no heading for #{fragment}"
    return None


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = [
        f"line {number}: {target} ({problem})"
        for number, target in _relative_links(path)
        if (problem := _link_problem(path, target)) is not None
    ]
    assert not broken, f"{path.relative_to(ROOT)} has broken links: {broken}"
