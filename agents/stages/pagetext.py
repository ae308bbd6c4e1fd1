"""A web page's HTML -> the plain text of its body, for the chunker (s4_chunk).

With the full-content web database (`local_evaluation.py --web-contents`) every web hit carries
`page_result`, the page's whole HTML; pages of the official database run to megabytes.
html-text (Zyte, MIT, over lxml) does the reading: it puts block elements (paragraphs,
headings, list items, table rows) on lines of their own, so sentences are not run together
across blocks or split inside inline markup, and decodes entities. Before it reads, lxml's own
cleaner (lxml-html-clean, with html-text's settings) removes what a reader never sees (scripts,
styles, comments, embedded objects) and, ours, the page chrome that HTML marks as such:
navigation, footers, asides and the <title> (the chunks already name their page). The rest of
a page's boilerplate is left to the chunker's cap and the reranker.

Only the first `max_chars` characters of the HTML are read: parsing time grows with the page
(about 0.5 s a megabyte on one core of our 2-core machines), and a turn has 10 s. Script and
style elements are dropped before that cut (a plain search for their tags, no parsing): a
crawled page's <head> can carry hundreds of kilobytes of them, and the cut would otherwise spend
its characters on code no reader sees and reach no body text at all.
"""
from __future__ import annotations

import re

import html_text
from lxml_html_clean import Cleaner

CHROME_TAGS = ("nav", "footer", "aside", "title", "noscript", "template")
# A script or style element, its content included; an unclosed one is left for the cleaner.
INVISIBLE_ELEMENT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
# How much of the page the search for those elements reads, in multiples of max_chars: the
# search is linear, but an unclosed tag makes it read to the end of what it is given.
INVISIBLE_SCAN_FACTOR = 5

# html-text's own cleaner settings (html_text.html_text.cleaner), plus the chrome tags
_CLEANER = Cleaner(scripts=True, javascript=False, comments=True, style=True, links=True, meta=True,
                   page_structure=False, processing_instructions=True, embedded=True, frames=True,
                   forms=False, annoying_tags=False, remove_unknown_tags=False, safe_attrs_only=False,
                   kill_tags=CHROME_TAGS)


def page_text(page_html: str, max_chars: int) -> str:
    """The visible text of the first `max_chars` characters of `page_html`, one block a line;
    "" for an empty, unparsable or non-text page."""
    if not isinstance(page_html, str) or not page_html.strip():
        return ""
    max_chars = max(0, int(max_chars))
    try:
        visible = INVISIBLE_ELEMENT.sub(" ", page_html[:max_chars * INVISIBLE_SCAN_FACTOR])
        tree = html_text.parse_html(visible[:max_chars])
        try:
            tree = _CLEANER.clean_html(tree)
        except AssertionError:  # lxml's cleaner asserts on some trees; html-text reads them uncleaned too
            pass
        return html_text.etree_to_text(tree, guess_layout=True)
    except Exception:  # noqa: BLE001 - lxml refuses some inputs (e.g. only a comment or a processing instruction)
        return ""
