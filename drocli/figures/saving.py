"""Figures written to disk: the formats asked for (png, pdf, svg), each file written
atomically (temp + os.replace) so a reader never sees half an image, with the title and
drocli's version as metadata and no creation date."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from drocli import __version__
from drocli.errors import DrocliError

if TYPE_CHECKING:
    from matplotlib.figure import Figure


FORMATS = ("png", "pdf", "svg")


def save_figure(fig: Figure, out_dir: Path, name: str, formats: list[str], dpi: int,
                title: str) -> list[Path]:
    """Write `fig` as out_dir/<name>.<fmt> for each format, atomically."""
    from drocli.results.ownership import inside

    paths = []
    for f in formats:
        path = inside(out_dir, Path(out_dir) / f"{name}.{f}")
        _save_atomic(fig, path, f, dpi, title)
        paths.append(path)
    return paths


def _formats(fmt: str) -> list[str]:
    formats = [f.strip().lower().lstrip(".") for f in str(fmt).split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise DrocliError(f"unknown figure format {fmt!r}", key="format",
                          fix=f"use one of {', '.join(FORMATS)} or a comma-separated list")
    return list(dict.fromkeys(formats))


def _metadata(fmt: str, title: str) -> dict:
    creator = f"drocli {__version__}"
    if fmt == "png":
        return {"Title": title, "Software": creator}
    if fmt == "pdf":
        return {"Title": title, "Creator": creator, "CreationDate": None}
    return {"Title": title, "Creator": creator, "Date": None}


def _save_atomic(fig: Figure, path: Path, fmt: str, dpi: int, title: str) -> None:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name)
    tmp = path.with_name(f".{safe}.{os.getpid()}.tmp")
    try:
        if fmt == "png":
            _save_png(fig, tmp, dpi, _metadata(fmt, title))
        else:
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=_metadata(fmt, title))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _save_png(fig: Figure, path: Path, dpi: int, metadata: dict) -> None:
    """PNG without the alpha channel when every pixel is opaque (the figures' white
    background): the same pixels in 3 bytes instead of 4, about 10 % smaller files."""
    import io

    import numpy as np
    from PIL import Image, PngImagePlugin

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata=metadata)
    img = Image.open(buf)
    if img.mode == "RGBA" and int(np.asarray(img.getchannel("A")).min()) == 255:
        img = img.convert("RGB")
    info = PngImagePlugin.PngInfo()
    for key, value in metadata.items():
        info.add_text(key, value)
    img.save(path, format="PNG", pnginfo=info, dpi=(dpi, dpi))
