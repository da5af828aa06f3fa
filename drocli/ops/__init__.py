"""drocli.ops."""
