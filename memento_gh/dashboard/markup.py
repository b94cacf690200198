"""Markdown of notes and task descriptions as HTML that is safe to put in the page.

mistune with ``escape=True``: raw HTML in the text comes out as text, and links with a
``javascript:``/``data:``/``vbscript:`` URL point nowhere. Beyond mistune's defaults, links
open in a new tab without telling the target where they came from, and images become links:
a note (which may come from a GitHub comment) must not make the page fetch anything.
"""

from __future__ import annotations

from functools import cache, lru_cache
from html import escape
from typing import Any

import mistune
from mistune.core import BlockState, InlineState


class _SafeRenderer(mistune.HTMLRenderer):
    def link(self, text: str, url: str, title: str | None = None) -> str:
        tip = f' title="{escape(title)}"' if title else ""
        return (
            f'<a href="{self.safe_url(url)}"{tip} target="_blank" '
            f'rel="noopener noreferrer nofollow">{text}</a>'
        )

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return self.link(f"🖼 {text or 'image'}", url, title)


@cache
def _markdown() -> Any:
    return mistune.create_markdown(
        escape=True, renderer=_SafeRenderer(escape=True), plugins=["strikethrough", "table"]
    )


def block(text: str) -> str:
    """A note's text: paragraphs, lists, quotes, code, tables."""
    return str(_markdown()(text))


@lru_cache(maxsize=8192)  # descriptions rarely change between two refreshes of the page
def inline(text: str) -> str:
    """A one-line description: emphasis, code and links, but never a heading or a list
    (``1. Setup`` stays text)."""
    markdown = _markdown()
    state = InlineState({})
    state.src = text
    return str(markdown.renderer(markdown.inline.parse(state), BlockState()))
