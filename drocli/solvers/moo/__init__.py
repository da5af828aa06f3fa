"""drocli.solvers.moo: multi-objective solvers (paper 003, (Ada)OMD-TCH)."""
