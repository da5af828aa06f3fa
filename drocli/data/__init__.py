"""drocli.data."""
