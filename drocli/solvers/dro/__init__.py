"""drocli.solvers.dro."""
