"""User-facing errors: one line naming the file, the key and the fix; the CLI exits 2 on them."""

from __future__ import annotations

import difflib


class DrocliError(Exception):
    """An error the user can fix; printed as one line without a traceback."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None,
                 fix: str | None = None):
        self.file, self.key, self.fix, self.detail = file, key, fix, message
        parts = [p for p in (file, key) if p]
        text = ": ".join(parts + [message]) if parts else message
        if fix:
            text += f" (fix: {fix})"
        super().__init__(text)

    def line(self, limit: int | None = None) -> str:
        """The error as one line of at most about `limit` characters (MAX_LINE): the key
        path and the fix stay whole; a long file path loses its middle first, then the
        message (see `fit_line`)."""
        return fit_line(self.file, self.key, self.detail, self.fix, limit or MAX_LINE)

    def __reduce__(self):
        """Picklable (errors raised on dask workers travel back to the client)."""
        return (_rebuild, (self.detail, self.file, self.key, self.fix))


def _rebuild(message, file, key, fix) -> DrocliError:
    return DrocliError(message, file=file, key=key, fix=fix)


MAX_LINE = 300          # characters of an error line (after "drocli: error: ")
ELLIPSIS = "\u2026"
MIN_FILE = 60           # a file path is never shortened below this
MIN_MESSAGE = 60        # nor the message
MAX_PART = 160          # a key path or fix longer than this (user text) is cut as well


def _one_line(text) -> str:
    return " ".join(str(text).split())


def shorten_middle(text: str, limit: int, mark: str = " [...] ") -> str:
    """`text` with its middle replaced by `mark` so that it fits in `limit` characters."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(mark), 2)
    head = keep * 2 // 5
    return text[:head] + mark + text[len(text) - (keep - head):]


def shorten_path(path: str, limit: int) -> str:
    """A file path shortened in its middle to about `limit` characters, keeping its start and
    as many whole trailing components as fit (`/very/long/\u2026/experiments/x.yaml`)."""
    if len(path) <= limit:
        return path
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[1:-1]):            # whole components from the end
        if len(part) + 1 + len(tail) > limit * 2 // 3:
            break
        tail = part + "/" + tail
    if len(tail) > limit - 2:                      # one enormous last component
        return shorten_middle(path, limit, ELLIPSIS)
    head = path[:limit - len(tail) - 2]            # "/" and the ellipsis
    cut = head.rfind("/")
    if cut > 0:                                    # whole leading components
        head = head[:cut + 1]
    return head + ELLIPSIS + "/" + tail


def _compose(file, key, message, fix) -> str:
    parts = [p for p in (file, key) if p]
    text = ": ".join(parts + [message]) if parts else message
    return text + (f" (fix: {fix})" if fix else "")


def fit_line(file: str | None, key: str | None, message: str, fix: str | None,
             limit: int = MAX_LINE) -> str:
    """`file: key: message (fix: fix)` on one line of about `limit` characters at most. The
    key path and the fix are what the user acts on, so they stay whole (unless they are
    themselves user text of absurd length); a long file path is shortened in its middle
    first (the file name and its folders stay readable), then the message."""
    file, key, message, fix = (_one_line(x) if x else x for x in (file, key, message, fix))
    message = message or ""
    text = _compose(file, key, message, fix)
    if len(text) <= limit:
        return text
    if key and len(key) > MAX_PART:
        key = shorten_middle(key, MAX_PART)
    if fix and len(fix) > MAX_PART:
        fix = shorten_middle(fix, MAX_PART)
    excess = len(_compose(file, key, message, fix)) - limit
    if file and excess > 0:
        file = shorten_path(file, max(MIN_FILE, len(file) - excess))
    excess = len(_compose(file, key, message, fix)) - limit
    if excess > 0:
        message = shorten_middle(message, max(MIN_MESSAGE, len(message) - excess))
    return _compose(file, key, message, fix)


def did_you_mean(name: str, choices) -> str:
    """A short hint naming the closest known names, or all of them when few."""
    choices = sorted(choices)
    close = difflib.get_close_matches(str(name), choices, n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "known: " + ", ".join(choices[:12]) + (" ..." if len(choices) > 12 else "")
