"""experience_reuse's row of the eval: strict hit@1 beside hit@1."""
from __future__ import annotations

from bench.eval import reuse
from bench.experience_reuse.dataset import select
from bench.experience_reuse.metrics import TaskRecord


def test_the_reuse_row_counts_a_merged_first_lesson_in_hit_at_1_only():
    fam = select(None)[0]
    recs = [
        TaskRecord(fam.id, fam.sibling, fam.kind, 0, "q", [[fam.id]]),
        TaskRecord(fam.id, fam.sibling, fam.kind, 1, "q", [[fam.sibling, fam.id]]),
    ]
    row = reuse._row([fam, *[f for f in select(None) if f.id == fam.sibling]], recs, recs)
    assert row["hit@1"] == 1.0 and row["strict_hit@1"] == 0.5
