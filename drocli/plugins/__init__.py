"""Plug-ins: the one registry of solvers, problems, data sources, figure kinds and claim kinds.

Open `registry.py` first: `@registry.solver(...)` and its siblings, and the lookups the
spec and the runner use. `discovery.py` finds each plug-in's module by reading sources, so
that `drocli list` imports none; `params.py` is the pydantic base every plug-in declares
its typed parameters with. The contract every entry must meet is drocli.testing.
"""
