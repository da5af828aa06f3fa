"""The `drocli` command line: one module per command beside this face, the click group that
gathers them (group) and the console entry point (entry); this face hands their names on."""
# ruff: noqa: F401

from drocli.cli.checking import EPILOG_CHECK, check, plan_lines
from drocli.cli.data_sets import data, data_fetch, data_list
from drocli.cli.entry import Terminated, main
from drocli.cli.error_lines import OS_FIXES, os_error_line, usage_line
from drocli.cli.group import cli
from drocli.cli.lookup import LIST_KINDS, list_, show
from drocli.cli.plotting import EPILOG_PLOT, plot
from drocli.cli.reporting import report
from drocli.cli.running import EPILOG_RUN, JOBS_PER_CORE, run
