"""The folders a command is given: an output folder, never empty (`--out ''` would fill the
working directory), and the spec saved in a results folder (plot and show read it).
"""

from __future__ import annotations

from pathlib import Path

import click


def _folder_path(ctx, param, value):
    """An output folder given on the command line: never empty (Path('') is the working
    directory itself, which a run would then fill)."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("is empty: name a folder (e.g. results/mine), or leave "
                                 "the option out", param=param)
    return Path(value)


def _saved_spec(results_dir):
    from drocli.results.records import results_file
    from drocli.spec import load_saved

    return load_saved(results_file(results_dir, "spec.yaml"))
