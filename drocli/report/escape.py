"""Text from results folders made safe for the pages: user text as inert Markdown (`md`) or
HTML (`_esc`), links percent-encoded (`_url`), paths that are not UTF-8 written as escapes
(`shown`). A spec or a manifest is a file anyone can edit, so none may inject markup.
"""

from __future__ import annotations

import html
import os
import re

PLAIN = re.compile(r"[A-Za-z0-9_.-]+")


def shown(text) -> str:
    """Any text as UTF-8 can write it: a byte of a path that is not UTF-8 (Python holds it
    as a lone surrogate, os.fsdecode's) shown as `\\xff`, any other lone surrogate (a
    forged manifest's JSON) as `\\udcff`; writing it raised UnicodeEncodeError (exit 3)."""
    text = str(text)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _name(name: str, code: bool = False) -> str:
    """A folder name in Markdown: as it is (in a code span if `code`) when plain (letters,
    digits, _ . -), else escaped as user text: a folder may be called anything, and a code
    span cannot escape a backtick."""
    if PLAIN.fullmatch(name):
        return f"`{name}`" if code else name
    return md(name)


def _url(path: str) -> str:
    """A relative link to a page or a figure, percent-encoded from the path's bytes: a folder
    named `a) | b` stays one link, one named with a byte that is not UTF-8 links to that
    byte (plain names are unchanged)."""
    from urllib.parse import quote

    return quote(os.fsencode(path))


MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]()#+!|~"} | {
    "<": "&lt;", ">": "&gt;", "&": "&amp;"})


def md(text) -> str:
    """User text (titles, captions, claim texts, provenance) as inert Markdown: one line,
    HTML and Markdown syntax escaped, so a spec cannot inject markup, links or table
    cells into the pages or the README block."""
    return " ".join(shown(text).split()).translate(MD_SPECIAL)


def _gen(text) -> str:
    """Text drocli generated (statuses, effects, intervals): one line, table and HTML
    characters escaped, brackets kept."""
    return " ".join(shown(text).split()).translate(str.maketrans(
        {"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}))


def _esc(value) -> str:
    """Any value as HTML text: a results folder's spec and manifest are files anyone can
    edit, so a field may hold None, a number or a list where text was written."""
    return html.escape(shown(value))
