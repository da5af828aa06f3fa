"""drocli.plugins: The plug-in registry: registration, discovery, typed parameters."""
