"""`drocli data list` and `drocli data fetch NAME`: where the papers' data sets are expected,
and downloading, verifying and placing their files.
"""

from __future__ import annotations

from pathlib import Path

import click

from drocli.cli.error_lines import _writing


@click.group()
def data():
    """The papers' data sets: where they are expected, and downloading them.

    \b
    drocli data list                          # every file-backed source: folder, status, size
    drocli data fetch cifar10                 # download, verify (MD5), place atomically
    drocli data fetch libsvm --file w8a --file w8a.t
    drocli data fetch mnist --mirror https://my.mirror/mnist/
    """


@data.command(name="list")
def data_list():
    """Every file-backed data source: where its files are expected, present or missing,
    their size on disk, and whether `drocli data fetch` can download them."""
    from drocli.data import datasets

    click.echo(datasets.table())


@data.command(name="fetch")
@click.argument("name")
@click.option("--mirror", metavar="URL", help="Base address replacing the canonical one "
              "(file names kept).")
@click.option("--file", "files", multiple=True, metavar="NAME",
              help="Only this file (repeatable); default: all of the source's files.")
@click.option("--to", type=click.Path(path_type=Path), help="Target folder [default: "
              "$DROCLI_DATA/<source>/]; pass the same folder as data.params.path.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def data_fetch(name, mirror, files, to, quiet):
    """Download NAME's files from the data set's public address, verify each against its
    published checksum (or the first download's size and SHA-256) and place it atomically;
    an interrupted download resumes."""
    from drocli.data import datasets
    from drocli.plugins import registry

    with _writing(lambda: to or datasets.folder_of(registry.get("data", name))):
        for path in datasets.fetch(name, mirror=mirror, files=files, to=to, quiet=quiet,
                                   log=lambda m: click.echo(m, err=True)):
            click.echo(str(path))
