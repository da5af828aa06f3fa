"""Which recorded labels a figure's legend entry stands for: the label itself, or the
variants a `-m` sweep made of it ('ERMEG (E=1)', 'ERMEG (E=4)' for 'ERMEG'), so a sweep's
figures draw every swept value under the spec's own legend."""

from __future__ import annotations


def variants(label: str, present: list[str]) -> list[str]:
    """The records' labels `label` stands for, in the records' order."""
    if label in present:
        return [label]
    return [p for p in present if p.startswith(f"{label} (") and p.endswith(")")]
