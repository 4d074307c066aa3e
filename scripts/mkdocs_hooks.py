"""MkDocs hook: links from docs/ to files elsewhere in the repository.

The pages under docs/ link to repository files such as ``../examples/ordering.toml`` so
that they work when read on GitHub. The site holds only docs/, so ``mkdocs build --strict``
would stop on such a link. This hook rewrites each of them, in the site only: to the file
on the forge when ``repo_url`` is set in mkdocs.yml, else to its repository path as code,
so that the reader still knows where to look. Links inside docs/ are left to MkDocs, which
checks them.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.jmslike_outside_links")

# [text](target), not images.
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s#]+)(?P<fragment>#[^)\s]*)?\)")
_FENCE = re.compile(r"^(```|~~~)")


def _outside_path(page_src: str, target: str, docs_dir: Path, repo_root: Path) -> str | None:
    """The target's path from the repository root, if it leaves docs/; else None."""
    if "://" in target or target.startswith(("mailto:", "/")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_src), target))
    absolute = (docs_dir / joined).resolve()
    if absolute.is_relative_to(docs_dir.resolve()):
        return None
    if not absolute.is_relative_to(repo_root.resolve()):
        return None
    return absolute.relative_to(repo_root.resolve()).as_posix()


def _rewrite_line(line: str, page_src: str, docs_dir: Path, config: Any) -> str:
    repo_root = Path(config["config_file_path"]).parent
    repo_url: str | None = config.get("repo_url")

    def replace(match: re.Match[str]) -> str:
        path = _outside_path(page_src, match.group("target"), docs_dir, repo_root)
        if path is None:
            return match.group(0)
        text = match.group("text")
        if repo_url:
            fragment = match.group("fragment") or ""
            return f"[{text}]({repo_url.rstrip('/')}/blob/main/{path}{fragment})"
        if text.strip("`") in (path, posixpath.dirname(path)):
            return f"`{path}`"
        return f"{text} (`{path}` in the repository)"

    return _LINK.sub(replace, line)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Rewrite links that leave docs/, outside fenced code blocks."""
    docs_dir = Path(config["docs_dir"])
    out: list[str] = []
    in_fence = False
    for line in markdown.split("\n"):
        if _FENCE.match(line.lstrip()):
            in_fence = not in_fence
            out.append(line)
            continue
        out.append(line if in_fence else _rewrite_line(line, page.file.src_uri, docs_dir, config))
    return "\n".join(out)
