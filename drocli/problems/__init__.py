"""drocli.problems."""
