"""The repository stands alone: no tracked file cites a document that lives outside it.

jmslike was first specified in documents kept next to the repository (the API sheet,
the ordering rules, the broker notes, the design notes). Their facts now live under
docs/ (docs/ordering.md for the ORD-n rules, docs/providers.md for broker behaviour,
docs/architecture.md for the design, docs/getting-started.md for the API), and a
citation of the old files sends a reader to something they cannot open. A name that
does exist in the repository, such as a future ``docs/api.md``, is not flagged: only
references that resolve to no tracked file are.

Every ``docs/...md`` path cited anywhere must also name a page that exists, so that a
renamed page cannot leave dead citations behind in code comments.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()

# Each pattern names one family of outside documents. The groups capture the path as
# written, which is then looked up among the tracked files.
_OUTSIDE = re.compile(
    r"""
    (?P<path>
        (?:\.\./)*shared/(?:[A-Za-z0-9_-]+\.md|note[s]/|hooks/|seeds/)[\w./-]*  # ../shared/X.md
      | (?<![\w./-])(?:API|ORDERING|BROKERS|DESIGN)\.md\b                    # the four sheets
      | (?<![\w-])note[s]/[\w-]+\.md                                            # a note
      | (?<![\w/-])(?:partition-facts|broker-semantics|wire-and-anchors)(?:\.md)?\b
    )
    """,
    re.VERBOSE,
)
_DOCS_CITATION = re.compile(r"(?<![\w./-])docs/[\w./-]+?\.md\b")


def _tracked_files() -> list[str]:
    result = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in result.stdout.decode().split("\0") if name]


def _text(name: str) -> str | None:
    """The file's text, or None for a binary file (images, jars) or one not checked out."""
    path = ROOT / name
    if not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _outside_refs(text: str, tracked: set[str]) -> list[str]:
    """Paths in ``text`` that name an outside document: no tracked file ends with them."""
    found: list[str] = []
    for match in _OUTSIDE.finditer(text):
        written = match.group("path").lstrip("./")
        if not any(name == written or name.endswith("/" + written) for name in tracked):
            found.append(match.group("path"))
    return found


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    files = _tracked_files()
    assert "README.md" in files, "git ls-files did not list the repository"
    return files


def test_no_tracked_file_cites_an_outside_document(tracked: list[str]) -> None:
    names = set(tracked)
    bad: list[str] = []
    for name in tracked:
        if name == THIS_FILE:
            continue
        text = _text(name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            bad.extend(f"{name}:{number}: {ref}" for ref in _outside_refs(line, names))
    assert not bad, (
        "these cite documents outside the repository; cite the docs/ page that holds the "
        "fact instead (docs/ordering.md, providers.md, architecture.md, performance.md, "
        "partitions.md, getting-started.md):\n" + "\n".join(bad)
    )


def test_cited_docs_pages_exist(tracked: list[str]) -> None:
    names = set(tracked)
    missing: list[str] = []
    for name in tracked:
        if name == THIS_FILE:
            continue
        text = _text(name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            missing.extend(
                f"{name}:{number}: {cited}"
                for cited in _DOCS_CITATION.findall(line)
                if cited not in names
            )
    assert not missing, "these cite docs/ pages that do not exist:\n" + "\n".join(missing)


# The examples are put together at run time, so that this file itself names no outside
# document (the check it makes runs on this file too).
_MD = ".md"
_NOTES = "no" + "tes/"


@pytest.mark.parametrize(
    "line",
    [
        f"confirms the last message with a receipt, as in ../shared/BROKERS{_MD}) and",
        f"Tests use only the public API of shared/API{_MD}, plus the helpers below:",
        f'"""API{_MD}: every error is a ``jmslike.JMSException`` subclass."""',
        f"(JVM warm-up matters, BROKERS{_MD}). Each side",
        "# see ORDER" + f"ING{_MD}, ORD-9",
        "DES" + f"IGN{_MD} thread model/JMS",
        f"Qpid JMS and Artemis implement ({_NOTES}wire-and-anchors{_MD}, section 0.2):",
        "as measured in partition-facts, section 3",
        f"see broker-semantics{_MD}",
        f"/work/shared/{_NOTES}partition-facts{_MD}",
    ],
)
def test_pattern_flags_outside_documents(line: str) -> None:
    assert _outside_refs(line, {"README.md", "docs/ordering.md"}), line


@pytest.mark.parametrize(
    "line",
    [
        "see docs/api.md for the reference",
        "docs/ordering.md defines ORD-1 to ORD-20",
        "durable and shared subscriptions, shared/exclusive queues",
        "release notes are in docs/changelog.md",
        "README.md and providers/README.md",
        f"an API call, not API{_MD}x",
    ],
)
def test_pattern_leaves_legitimate_names(line: str) -> None:
    assert not _outside_refs(line, {"README.md", "docs/api.md"}), line


def test_a_name_that_exists_in_the_repository_is_not_flagged() -> None:
    line = f"see {_NOTES}design{_MD}"
    assert _outside_refs(line, {"README.md"})
    assert not _outside_refs(line, {"README.md", f"docs/{_NOTES}design{_MD}"})
