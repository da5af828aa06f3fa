"""Paper claims as data, judged on records.

This face hands on the names plug-ins, the CLI and the report import from `drocli.claims`:
the claim model (base: `ClaimBase`, `validate_claim`, panels), the verdict of one claim
(result: `ClaimResult`, statuses), judging one claim (evaluate_one) and a spec's claims
(evaluate, looks for a sequential plan's looks), and verdicts in words (verdict_text). Each
claim kind is its own plug-in module beside them (final_below.py, reach_first.py, ...).
"""

from drocli.claims.base import (
    PANEL_SIZES,
    Ablates,
    ClaimBase,
    OpaqueClaim,
    Scalar,
    Source,
    panel_parts,
    panels_set_metric,
    validate_claim,
)
from drocli.claims.evaluate import MAX_MARGIN_RANGES, _ByMetric, evaluate_claims
from drocli.claims.evaluate_one import evaluate_claim
from drocli.claims.looks import evaluate_at_looks, rows_of_seeds
from drocli.claims.result import MULTIPLICITY, STATUSES, ClaimResult
from drocli.claims.verdict_text import (
    SUMMARY_ORDER,
    TAGS,
    UNEXPECTED_HINT,
    format_result,
    summary_counts,
    summary_line,
    tag,
)

__all__ = ["MAX_MARGIN_RANGES", "MULTIPLICITY", "PANEL_SIZES", "STATUSES", "SUMMARY_ORDER",
           "TAGS", "UNEXPECTED_HINT", "Ablates", "ClaimBase", "ClaimResult", "OpaqueClaim",
           "Scalar", "Source", "_ByMetric", "evaluate_at_looks", "evaluate_claim",
           "evaluate_claims", "format_result", "panel_parts", "panels_set_metric",
           "rows_of_seeds", "summary_counts", "summary_line", "tag", "validate_claim"]
