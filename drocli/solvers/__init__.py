"""drocli.solvers."""
