"""`drocli plot RESULTS_DIR`: draws the figures the saved spec declares, from the finished
cells, saying on stderr which were left out and why.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from drocli.cli.error_lines import _writing
from drocli.cli.folders import _folder_path, _saved_spec
from drocli.errors import DrocliError

EPILOG_PLOT = """\b
Examples:
  drocli plot results/gdro_synthetic                 # PNGs in results/gdro_synthetic/figures/
  drocli plot results/gdro_synthetic --format pdf    # publication PDFs
Figures (panels, x, bands, legend order, captions) are declared under `figures:` in the spec.
"""


@click.command(epilog=EPILOG_PLOT)
@click.argument("results_dir", metavar="RESULTS_DIR", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(), callback=_folder_path,
              help="Figure folder [default: RESULTS_DIR/figures].")
@click.option("--format", "fmt", type=click.Choice(["png", "pdf", "svg"]), default="png",
              show_default=True)
def plot(results_dir, out, fmt):
    """Render the figures declared in the spec saved in RESULTS_DIR."""
    from drocli.figures.plotting import plot_figures
    from drocli.results.integrity import read_checked

    spec = _saved_spec(results_dir)
    df, completeness = read_checked(results_dir)
    if not completeness.complete:
        click.echo(f"drocli: {results_dir}: {completeness.note()}; the figures show the "
                   "finished cells only", err=True)
    if out is None:       # the folder's own figures/: never written through a link
        from drocli.results.ownership import inside

        inside(Path(results_dir), Path(results_dir) / "figures" / "figure")
    folder = Path(out or Path(results_dir) / "figures")
    skipped: list[str] = []
    try:
        with _writing(folder), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", UserWarning)
            paths = plot_figures(df, spec.figures, folder, fmt=fmt,
                                 experiment_title=spec.title or spec.name,
                                 context={"spec": spec, "results_dir": Path(results_dir)},
                                 skipped=skipped)
    except ValueError as e:     # a label drawn as mathtext ($\frac{1$) that matplotlib refuses
        from drocli.figures.plots import MATH_FIX, mathtext_failure

        why = mathtext_failure(e)
        if why is None:
            raise
        raise DrocliError(why, file=str(Path(results_dir) / "spec.yaml"),
                          fix=MATH_FIX) from None
    for p in paths:
        click.echo(str(p))
    for line in skipped:               # figures of cases or solvers this run left out
        click.echo(f"drocli: {results_dir}: {line}", err=True)
    for w in said:                     # drocli's one-line messages, not Python's warnings
        if issubclass(w.category, UserWarning):
            click.echo(f"drocli: {results_dir}: {' '.join(str(w.message).split())}", err=True)
    for line in spec._unread:          # figures whose kind's plug-in is not installed
        click.echo(f"drocli: {results_dir}: {line}: not drawn; install the package that "
                   "brings it", err=True)
