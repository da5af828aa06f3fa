"""Every claim of a shipped spec quotes the paper it encodes, and the quote is the paper's.

The quotes are looked up, verbatim up to white space (fragments joined by ' ... ' in
order), in the text of the paper. The texts are not part of the repository: the check runs
where they are (../shared/papers/seeds next to the checkout, or DROCLI_PAPERS)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "experiments").glob("*.yaml"))
PAPERS = Path(os.environ.get("DROCLI_PAPERS", ROOT.parent / "shared" / "papers" / "seeds"))
PAPER_OF = {"as_lsvrg": "002", "gdro": "000", "mero": "000", "zo_smd": "001",
            "omd_tch": "003", "svrb": "004", "re_rsvrb": "004"}


def _claims(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text()).get("claims") or []


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_every_claim_has_a_source():
    missing = [f"{p.name}: {c['id']}" for p in SPECS for c in _claims(p)
               if not (c.get("source") or {}).get("quote") or not c["source"].get("where")]
    assert not missing, missing
    assert sum(len(_claims(p)) for p in SPECS) > 100


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"paper texts not here ({PAPERS})")
def test_every_quote_is_in_its_paper():
    texts = {p.name[:3]: _norm(p.read_text()) for p in PAPERS.glob("*.txt")}
    bad = []
    for spec in SPECS:
        paper = next(v for k, v in PAPER_OF.items() if spec.stem.startswith(k))
        text = texts[paper]
        for c in _claims(spec):
            pos = 0
            for frag in c["source"]["quote"].split(" ... "):
                i = text.find(_norm(frag), pos)
                if i < 0:
                    bad.append(f"{spec.name}: {c['id']}: {frag[:60]!r}")
                    break
                pos = i + len(frag)
    assert not bad, bad
