"""scripts/mkdocs_hooks.py: links that leave docs/ are rewritten for the site, others kept.

The strict site build (scripts/test.sh) would stop on a link to ``../examples/x.py``; the
hook turns such links into repository paths, and must leave links between docs/ pages,
anchors, web addresses and code blocks exactly as written.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "jmslike_mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _render(hooks: ModuleType, markdown: str, src: str = "guide.md", **extra: Any) -> str:
    config = {
        "docs_dir": str(ROOT / "docs"),
        "config_file_path": str(ROOT / "mkdocs.yml"),
        "repo_url": None,
        **extra,
    }
    page = SimpleNamespace(file=SimpleNamespace(src_uri=src))
    result: str = hooks.on_page_markdown(markdown, page=page, config=config, files=None)
    return result


def test_link_out_of_docs_becomes_a_repository_path(hooks: ModuleType) -> None:
    out = _render(hooks, "See [the example](../examples/quickstart.py) first.")
    assert out == "See the example (`examples/quickstart.py` in the repository) first."


def test_link_whose_text_is_the_path_becomes_code(hooks: ModuleType) -> None:
    out = _render(hooks, "[`examples/ordering.toml`](../examples/ordering.toml)")
    assert out == "`examples/ordering.toml`"


def test_link_from_a_subfolder_page(hooks: ModuleType) -> None:
    out = _render(hooks, "[README](../../README.md#install)", src="reference/jmslike.md")
    assert out == "README (`README.md` in the repository)"


def test_repo_url_gives_a_forge_link(hooks: ModuleType) -> None:
    out = _render(hooks, "[x](../providers/README.md)", repo_url="https://example.org/jmslike/")
    assert out == "[x](https://example.org/jmslike/blob/main/providers/README.md)"


@pytest.mark.parametrize(
    "markdown",
    [
        "[ordering](ordering.md#ord-1-group-names)",
        "[rules](#ord-16-brokers-that-ignore-groups)",
        "[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)",
        "![plot](performance/ratios.png)",
        "```text\n[kept](../examples/quickstart.py)\n```",
    ],
)
def test_other_links_are_kept(hooks: ModuleType, markdown: str) -> None:
    assert _render(hooks, markdown) == markdown
