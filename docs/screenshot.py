"""Screenshot a page of the generated report with headless Chromium, where it is installed.

    python docs/screenshot.py [docs/report/index.html] [--out docs/report/index.png]

The report is static HTML, so the page is opened from disk (file://, no server). Without a
Chromium binary (chromium, chromium-browser, google-chrome) it says so and exits 1.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", nargs="?", default="docs/report/index.html", type=Path)
    ap.add_argument("--out", type=Path, help="PNG to write [default: PAGE with .png]")
    ap.add_argument("--size", default="1280,2000", help="window width,height in pixels")
    args = ap.parse_args(argv)
    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        print(f"screenshot: no Chromium found ({', '.join(BROWSERS)}); install one "
              "(e.g. apt-get install chromium) and run again", file=sys.stderr)
        return 1
    if not args.page.is_file():
        print(f"screenshot: {args.page}: no such page; run `drocli report` first",
              file=sys.stderr)
        return 1
    out = (args.out or args.page.with_suffix(".png")).resolve()
    cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
           f"--window-size={args.size}", f"--screenshot={out}", args.page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not out.is_file():
        print(f"screenshot: {browser} failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
