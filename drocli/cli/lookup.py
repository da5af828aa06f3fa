"""`drocli list` and `drocli show`: what is registered (plug-ins and shipped specs) and what a
spec resolves to, or a results folder's provenance and saved spec; nothing is run.
"""

from __future__ import annotations

from pathlib import Path

import click

from drocli.cli.folders import _saved_spec
from drocli.errors import DrocliError

LIST_KINDS = {"solvers": "solver", "problems": "problem", "data": "data",
              "figures": "figure", "claims": "claim"}


@click.command(name="list")
@click.argument("what", type=click.Choice([*LIST_KINDS, "experiments"]), required=False)
@click.argument("name", required=False)
def list_(what, name):
    """List plug-ins (solvers, problems, data, figures, claims) or shipped specs.

    \b
    drocli list solvers          # name, family, one line each
    drocli list solvers aleg     # every parameter: type, range, default, description
    """
    from drocli.cli import listing

    if name is not None:
        if what in (None, "experiments"):
            raise DrocliError("a NAME needs a plug-in kind", key="list",
                              fix="e.g. `drocli list solvers aleg`")
        click.echo(listing.describe(LIST_KINDS[what], name))
        return
    kinds = [what] if what else [*LIST_KINDS, "experiments"]
    for kind in kinds:
        if kind == "experiments":
            from drocli.cli.catalog import listing as experiments

            click.echo(experiments())
            continue
        click.echo(listing.table(LIST_KINDS[kind]))


@click.command()
@click.argument("spec_file", metavar="SPEC", type=click.Path(path_type=Path))
@click.argument("overrides", metavar="[KEY=VALUE]...", nargs=-1)
@click.option("--multirun", "-m", is_flag=True, help="KEY=a,b,c sweeps the value, as in run.")
@click.option("--solver", "-s", "only_solvers", multiple=True, metavar="LABEL",
              help="Only this solver entry (label or name); repeatable.")
@click.option("--case", "-d", "--data", "only_data", multiple=True, metavar="CASE",
              help="Only this case (named setting); repeatable (-d, --data: the same).")
@click.option("--profile", "-p", help="Spec profile: smoke, quick, paper [default].")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a spec value by dotted path (YAML value); repeatable.")
def show(spec_file, overrides, multirun, only_solvers, only_data, profile, sets):
    """Print the resolved spec (profile, overrides and defaults applied) without running it.
    Given a results folder: its provenance (commit, machine, CPU model, BLAS kernels, load,
    compute time) as YAML comments, then its saved spec."""
    from drocli.spec import dump_spec, load_spec, parse_set
    from drocli.spec.overrides import comma_hint, positional

    if spec_file.is_dir():
        if overrides or multirun or only_solvers or only_data or profile or sets:
            raise DrocliError("a results folder's spec is shown as it was run",
                              file=str(spec_file), fix="give overrides with a SPEC file")
        from drocli.report.escape import shown
        from drocli.report.provenance import folder_provenance

        for k, v in folder_provenance(spec_file):
            click.echo(shown(f"# {k}: {' '.join(str(v).split())}"))
        try:
            click.echo(dump_spec(_saved_spec(spec_file)), nl=False)
        except DrocliError as e:
            # a plug-in it names is not installed: the folder still describes itself
            from drocli.results.files import MAX_SPEC_BYTES, read_text
            from drocli.results.records import results_file

            text = read_text(results_file(spec_file, "spec.yaml"), MAX_SPEC_BYTES)
            click.echo(shown(f"# spec.yaml as saved (not validated here: {e.detail})"))
            click.echo(text, nl=not text.endswith("\n"))
        return
    with comma_hint(overrides, multirun):
        spec = load_spec(spec_file, profile=profile,
                         overrides=parse_set(sets) + positional(overrides, multirun),
                         solvers=only_solvers, data=only_data)
    click.echo(dump_spec(spec), nl=False)
