"""`drocli report RESULTS_DIR... --out DIR`: the command over drocli.report (the pages, the
index, the README's status block, or only its check).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from drocli.cli.error_lines import _writing
from drocli.cli.folders import _folder_path
from drocli.errors import DrocliError


@click.command()
@click.argument("results_dirs", metavar="RESULTS_DIR...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(), required=True, callback=_folder_path,
              help="Report folder (Markdown and HTML pages, index, the figures copied in); "
                   "required: the tracked docs/report is written only when named.")
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the status block of this README (between its markers).")
@click.option("--check", is_flag=True, help="With --readme: write nothing; exit 1 when the "
              "block is stale.")
def report(results_dirs, out, readme, check):
    """Write a reproduction report of RESULTS_DIR... into --out: per folder a Markdown and an
    HTML page (figures copied into the report, verdicts with paired effects and intervals,
    provenance) and an index; the folder can be moved or copied whole. With --readme, the
    README's generated status block (one line per folder, linking --out)."""
    import os

    from drocli.report.escape import shown
    from drocli.report.folder import distinct, write
    from drocli.report.page import _load
    from drocli.report.readme import readme_block, update_readme

    results_dirs = distinct(results_dirs)     # a folder given twice is reported once
    if check:
        if readme is None:
            raise DrocliError("--check needs --readme", key="--check",
                              fix="drocli report results/* --out docs/report --readme "
                                  "README.md --check")
        pages = [_load(d) for d in results_dirs]
    else:
        with _writing(out):
            pages = write(list(results_dirs), out)
        click.echo(f"report: {shown(out / 'index.html')} ({len(pages)} pages)")
    if readme is not None:
        link = os.path.relpath(out, Path(readme).parent)
        with _writing(readme):
            current = update_readme(readme, readme_block(pages, link), check)
        if check and not current:
            click.echo(shown(f"{readme}: the status block is stale; run `drocli report "
                             f"{' '.join(map(str, results_dirs))} --out {out} --readme {readme}`"),
                       err=True)
            sys.exit(1)
        click.echo(shown(f"{readme}: status block {'current' if current else 'written'}"))
