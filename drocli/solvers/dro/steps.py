"""Descriptions shared by the GDRO / MERO solvers' step parameters (docs/papers/000.md §2.5,
§4.1)."""

GAMMA_W = ("effective w-step (decoupled steps, §2.5); tuned by the §4.1 protocol, "
           "grids in docs/reproduction.md")
GAMMA_Q = ("effective q-step of the entropic (Hedge) update (§2.5); tuned by the "
           "§4.1 protocol, grids in docs/reproduction.md")
ETA = ("coupled theory geometry instead of gamma_w, gamma_q: gamma_w = R^2 eta, "
       "gamma_q = 2 ln(m) eta (docs/papers/000.md §1.4); auto: the decoupled gamma_w, gamma_q")
