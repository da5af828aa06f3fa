"""drocli.solvers.fl: fair federated-learning aggregation methods (paper 003, docs/papers/003.md
§2.6).

One module per method; `base` holds the shared LocalRound loop. All are family "federated" and
run on a problem exposing `local_round` (see `base.run`).
"""
