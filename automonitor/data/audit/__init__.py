"""Benchmark audit: shortcut baselines, train/test leakage, tiny-diff pairs and controls (``automonitor audit``).

For every slice of an edition's test set (one per source, one per category x task cell): the pairs per label
provenance, the AUROC of trivial baselines trained on ``train`` and scored on ``test`` (``length``,
``tfidf``, ``answer_equals_suggestion``; ``flagged`` at :data:`FLAG_AUROC`), near-duplicate, shared-
conversation and tiny-diff pairs, and the baselines' false alarm rate on ``controls``; what each figure
is and how to read it: ``docs/explanation/audit.md``.

Pure functions work on a pandas frame of samples (columns id, pair_id, category, task, label, request,
response, source, label_source, split, meta); :func:`run_audit` loads it from the store for an edition and
:func:`cached_audit` memoises the result on disk and in the store, keyed by a fingerprint of the samples.

One module per job (this package re-exports the public names):

- :mod:`~automonitor.data.audit.params`: the parameters above, :data:`EDITIONS`, :data:`BASELINES`;
- :mod:`~automonitor.data.audit.leakage`: the train/test/controls splits, near-duplicates, shared
  conversations, tiny-diff pairs;
- :mod:`~automonitor.data.audit.baselines`: length and TF-IDF features and the trained baselines;
- :mod:`~automonitor.data.audit.suggestion`: the answer-equals-suggestion baseline;
- :mod:`~automonitor.data.audit.slices`: the per-source and per-cell SLICE docs;
- :mod:`~automonitor.data.audit.controls`: baseline false alarm rates on the controls;
- :mod:`~automonitor.data.audit.document`: :func:`audit_frame`, the whole document;
- :mod:`~automonitor.data.audit.editions`: :func:`load_samples` / :func:`run_audit` on a store;
- :mod:`~automonitor.data.audit.cache`: :func:`cached_audit` (memory + disk + the store's copy, by the
  samples' fingerprint) and :func:`keep_audits` (the build's copy in the store);
- :mod:`~automonitor.data.audit.report_md`: :func:`markdown` (the audit document); the report's
  baselines section is :mod:`automonitor.analysis.audit_section`;
- :mod:`~automonitor.data.audit.figures`: the app's table and plotly figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.lazy import lazy_exports

if TYPE_CHECKING:
    from automonitor.data.audit.cache import memo as memo  # benchmarks/bench_audit.py clears it
    from automonitor.data.audit.cache import cached_audit, fingerprint, keep_audits
    from automonitor.data.audit.document import audit_frame
    from automonitor.data.audit.editions import load_samples, run_audit
    from automonitor.data.audit.figures import (
        baselines_figure,
        controls_figure,
        flag_rule_text,
        leakage_figure,
        slices_table,
        test_set_text,
    )
    from automonitor.data.audit.leakage import (
        dialogue_turns,
        near_duplicates,
        shared_conversations,
        tiny_diff_pairs,
    )
    from automonitor.data.audit.params import EDITIONS, JACCARD, TINY_DIFF_TOKENS, check_edition
    from automonitor.data.audit.report_md import markdown
    from automonitor.data.audit.suggestion import parse_final_letter, parse_suggestion, suggestion_score

#: Where each public name lives; imported on first use (PEP 562): reading a cached audit
#: (:func:`cached_audit`) then imports neither scikit-learn nor the leakage checks.
_HOME, __getattr__ = lazy_exports(__file__, __name__)


__all__ = [name for name in _HOME if name != "memo"]  # memo: for benchmarks/bench_audit.py only
