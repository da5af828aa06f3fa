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

    def __reduce__(self):
        """Picklable (errors raised on dask workers travel back to the client)."""
        return (_rebuild, (self.detail, self.file, self.key, self.fix))


def _rebuild(message, file, key, fix) -> DrocliError:
    return DrocliError(message, file=file, key=key, fix=fix)


def did_you_mean(name: str, choices) -> str:
    """A short hint naming the closest known names, or all of them when few."""
    choices = sorted(choices)
    close = difflib.get_close_matches(str(name), choices, n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "known: " + ", ".join(choices[:12]) + (" ..." if len(choices) > 12 else "")
