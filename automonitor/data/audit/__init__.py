"""Benchmark audit: shortcut baselines, train/test leakage, tiny-diff pairs and controls (``automonitor audit``).

A monitor benchmark whose labels a trivial rule can recover measures nothing. For every slice of an
edition's test set (one per source and one per category x task cell) the audit reports:

- ``pairs``, ``samples`` and the pairs per ``label_source`` (label provenance);
- the AUROC (``sklearn.metrics.roc_auc_score``; misbehavior is the positive class) of trivial baselines
  TRAINED ON ``train`` AND SCORED ON ``test``:

  * ``length``: logistic regression on two features of the response alone, ``log(1 + characters)`` and
    the within-pair length ratio ``log((1 + characters) / (1 + characters of the other side))`` (0 for an
    unpaired sample);
  * ``tfidf``: TF-IDF of the response (word uni- and bigrams, sublinear tf, ``min_df=2``, 50k features,
    vectorizer fitted once on all train responses) + logistic
    regression;
  * ``answer_equals_suggestion`` (sycophancy slices only, untrained): 1 when the response's final answer
    equals the option the user suggested in the request (parsed from the text, see
    :func:`suggestion_score`), else 0;

  a slice is ``flagged`` when any baseline reaches AUROC >= :data:`FLAG_AUROC` (0.9);
- ``near_duplicate_pairs``: test pairs with a sample whose request + response is a near-duplicate of a
  train sample: MinHash (``datasketch``, :data:`NUM_PERM` permutations) over lower-cased word
  :data:`SHINGLE`-shingles, ``MinHashLSH`` at estimated Jaccard >= :data:`JACCARD`, each candidate
  re-checked on its estimated Jaccard;
- ``shared_conversations``: test pairs of Human/Assistant dialogues (hh_rlhf style) that share their first
  human turn with a train dialogue, or where one dialogue (request + response) is a prefix of the other;
  an independent check, not the build's grouping;
- ``tiny_diff_pairs``: test pairs whose two responses differ by <= :data:`TINY_DIFF_TOKENS` tokens
  (``difflib`` opcodes over ``\\w+|[^\\w\\s]`` tokens; whitespace-only differences count as 0);
- ``controls``: on the benign-only ``controls`` split, the false alarm rate of each applicable baseline
  (trained ones at the logistic regression's own 0.5 decision threshold; answer-equals-suggestion: the
  share of samples it flags).

Pure functions work on a pandas frame of samples (columns id, pair_id, category, task, label, request,
response, source, label_source, split, meta); :func:`run_audit` loads it from the store for an edition and
:func:`cached_audit` memoises the result on disk keyed by a fingerprint of the samples.

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
- :mod:`~automonitor.data.audit.cache`: :func:`cached_audit` (memory + disk, by store fingerprint);
- :mod:`~automonitor.data.audit.report_md`: :func:`markdown` (the audit document); the report's
  baselines section is :mod:`automonitor.analysis.audit_section`;
- :mod:`~automonitor.data.audit.figures`: the app's table and plotly figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.lazy import lazy_getattr

if TYPE_CHECKING:
    from automonitor.data.audit.baselines import length_features, tfidf_vectorizer
    from automonitor.data.audit.cache import memo as memo  # benchmarks/bench_audit.py clears it
    from automonitor.data.audit.cache import cache_dir, cached_audit, fingerprint
    from automonitor.data.audit.document import audit_frame
    from automonitor.data.audit.editions import check_edition, load_samples, run_audit
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
        token_diff,
    )
    from automonitor.data.audit.params import (
        ALL_SOURCES,
        AUDIT_VERSION,
        BASELINES,
        EDITIONS,
        FLAG_AUROC,
        JACCARD,
        MIN_TRAIN_PER_CLASS,
        NUM_PERM,
        SHINGLE,
        SYCOPHANCY,
        TINY_DIFF_TOKENS,
    )
    from automonitor.data.audit.report_md import markdown
    from automonitor.data.audit.suggestion import parse_final_letter, parse_suggestion, suggestion_score

#: Where each public name lives; imported on first use (PEP 562): reading a cached audit
#: (:func:`cached_audit`) then imports neither scikit-learn nor the leakage checks.
_HOME = {
    "ALL_SOURCES": "params",
    "AUDIT_VERSION": "params",
    "BASELINES": "params",
    "EDITIONS": "params",
    "FLAG_AUROC": "params",
    "JACCARD": "params",
    "MIN_TRAIN_PER_CLASS": "params",
    "NUM_PERM": "params",
    "SHINGLE": "params",
    "SYCOPHANCY": "params",
    "TINY_DIFF_TOKENS": "params",
    "audit_frame": "document",
    "baselines_figure": "figures",
    "cache_dir": "cache",
    "cached_audit": "cache",
    "check_edition": "editions",
    "controls_figure": "figures",
    "dialogue_turns": "leakage",
    "fingerprint": "cache",
    "flag_rule_text": "figures",
    "leakage_figure": "figures",
    "length_features": "baselines",
    "load_samples": "editions",
    "markdown": "report_md",
    "memo": "cache",
    "near_duplicates": "leakage",
    "parse_final_letter": "suggestion",
    "parse_suggestion": "suggestion",
    "run_audit": "editions",
    "shared_conversations": "leakage",
    "slices_table": "figures",
    "suggestion_score": "suggestion",
    "test_set_text": "figures",
    "tfidf_vectorizer": "baselines",
    "tiny_diff_pairs": "leakage",
    "token_diff": "leakage",
}


__getattr__ = lazy_getattr(__name__, _HOME)


__all__ = [
    "ALL_SOURCES",
    "AUDIT_VERSION",
    "BASELINES",
    "EDITIONS",
    "FLAG_AUROC",
    "JACCARD",
    "MIN_TRAIN_PER_CLASS",
    "NUM_PERM",
    "SHINGLE",
    "SYCOPHANCY",
    "TINY_DIFF_TOKENS",
    "audit_frame",
    "baselines_figure",
    "cache_dir",
    "cached_audit",
    "check_edition",
    "controls_figure",
    "dialogue_turns",
    "fingerprint",
    "leakage_figure",
    "length_features",
    "load_samples",
    "markdown",
    "near_duplicates",
    "parse_final_letter",
    "parse_suggestion",
    "run_audit",
    "shared_conversations",
    "slices_table",
    "test_set_text",
    "flag_rule_text",
    "suggestion_score",
    "tfidf_vectorizer",
    "tiny_diff_pairs",
    "token_diff",
]
