"""The `drocli` click group: its help, its version option, and the commands it gathers, in the
order they were written (`drocli --help` lists them sorted).
"""

from __future__ import annotations

import click

from drocli import __version__
from drocli.cli.checking import check
from drocli.cli.data_sets import data
from drocli.cli.lookup import list_, show
from drocli.cli.plotting import plot
from drocli.cli.reporting import report
from drocli.cli.running import run


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="drocli")
def cli():
    """Reproduce, extend and regression-check stochastic-optimization papers.

    \b
    A YAML spec in experiments/ names the data, the problem, the solvers, the seeds,
    the budget, the figures and the paper's claims. The usual loop:
      drocli run experiments/gdro_synthetic.yaml --profile smoke --out runs/gdro   # -> tidy CSV
      drocli plot runs/gdro                          # the paper's figures
      drocli check runs/gdro --reference results/gdro_synthetic-smoke   # claims, regressions
    `drocli list` shows the registered solvers, data sources, problems and specs.
    """


for command in (run, plot, check, list_, show, report, data):   # the order they were written in
    cli.add_command(command)
