"""drocli: a command-line runner that reproduces stochastic-optimization papers from YAML specs."""

__version__ = "0.1.0"
