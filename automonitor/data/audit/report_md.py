"""Markdown: the audit document (:func:`markdown`, ``automonitor audit --format markdown``) and the
report's trivial-baselines section (:func:`report_markdown`); every value escaped. The document as
printed by ``automonitor audit --json``: :func:`rounded_figures`.
"""

from __future__ import annotations

from typing import Any

from automonitor.escaping import md_cell
from automonitor.jsontypes import JSONValue


#: Decimals of every figure ``automonitor audit --json`` prints (AUROCs, pairwise shares, false alarm rates):
#: those its AUROC intervals and certificate were already rounded to. The markdown and the table print 2.
FIGURE_DECIMALS = 4


def rounded_figures(value: JSONValue, digits: int = FIGURE_DECIMALS) -> JSONValue:
    """A copy of the JSON value ``value`` with every float rounded to ``digits`` decimals (``round``: 0.9999999999999999
    -> 1.0), ints, strings, booleans and ``None`` as they are; the audit document as ``audit --json`` prints
    it. Flags were decided on the unrounded figures (a slice's ``flagged`` is the audit's, not recomputed)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: rounded_figures(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded_figures(v, digits) for v in value]
    return value


def fmt2(x: Any) -> str:
    """A value with two decimals, ``-`` for ``None``."""
    return "-" if x is None else f"{x:.2f}"


def _pairs(s: dict[str, Any]) -> str:
    """A slice's pairs, with its benign-only controls apart (``407 + 1968 controls``)."""
    c = int(s.get("controls") or 0)
    return f"{s['pairs']} + {c} controls" if c else str(s["pairs"])


def markdown(doc: dict[str, Any]) -> str:
    """The audit as a markdown document: the slices table (bold flag where a baseline reaches the flag
    AUROC), then leakage, tiny-diff pairs and controls lines. Every value is escaped."""
    margin = doc["params"]["flag_auroc"] - 0.5
    lines = [
        f"Audit of edition `{md_cell(doc['edition'])}` (test set: {md_cell(doc.get('test_set', '-'))}; "
        f"{doc['n_test']} test / {doc['n_train']} train samples). Each baseline cell: AUROC / pairwise "
        "(share of pairs whose misbehavior side scores higher), trained on train and scored on test, or "
        f"cross-validated within the test slice where it has no train data (method CV); flag at "
        f"|AUROC - 0.5| >= {margin:.1f} (reversed separators included).",
        "",
        "| source | category | task | pairs | label source | method | length | tfidf | answer = suggestion "
        "| near-dup pairs | shared conv. | shared family | <=3-token pairs | flag |",
        "|---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cell(s: dict[str, Any], name: str) -> str:
        if name not in s["baselines"]:
            return ""
        pw = (s.get("pairwise") or {}).get(name)
        return f"{fmt2(s['baselines'][name])} / {fmt2(pw)}"

    for s in doc["slices"]:
        ls = ", ".join(f"{md_cell(k)} {v}" for k, v in s["label_source"].items())
        src = "**all**" if s["kind"] == "cell" else md_cell(s["source"])
        flag = "**FLAG** (" + ", ".join(md_cell(x) for x in s["flagged_by"]) + ")" if s["flagged"] else ""
        method = "CV" if s.get("baseline_method") == "within_test_cv" else "train"
        lines.append(
            f"| {src} | {md_cell(s['category'])} | {md_cell(s['task'])} | {_pairs(s)} | {ls} | {method} | "
            f"{cell(s, 'length')} | {cell(s, 'tfidf')} | {cell(s, 'answer_equals_suggestion')} | "
            f"{s['near_duplicate_pairs']} | {s['shared_conversations']} | {s.get('shared_family_pairs', 0)} | "
            f"{s['tiny_diff_pairs']} | {flag} |"
        )
    lk, ct = doc["leakage"], doc["controls"]
    lines += [
        "",
        f"Leakage train -> test: {lk['near_duplicate_pairs']} test pairs with a near-duplicate train sample "
        f"({md_cell(lk.get('method', {}).get('near_duplicate', ''))}); {lk['shared_conversations']} test pairs "
        f"share a conversation with train; {lk.get('shared_family_pairs', 0)} test pairs share a problem family "
        "with train.",
        f"Pairs whose sides differ by <= {doc['params']['tiny_diff_tokens']} tokens: {doc['tiny_diff_pairs']}.",
        *_errata_line(doc),
        f"Controls (benign only): {ct['samples']} samples"
        + (
            ("; false alarm rate " + ", ".join(f"{md_cell(k)} {v:.2f}" for k, v in ct["far"].items()))
            if ct["far"]
            else ""
        )
        + ".",
    ]
    notes = [(s, k, v) for s in doc["slices"] for k, v in s.get("notes", {}).items()]
    if notes:
        lines += ["", "Notes:"]
        lines += [
            f"- {md_cell(s['source'])} {md_cell(s['category'])}/{md_cell(s['task'])}, {md_cell(k)}: {md_cell(v)}"
            for s, k, v in notes
        ]
    return "\n".join(lines) + "\n"


def _errata_line(doc: dict[str, Any]) -> list[str]:
    """The errata line of the audit markdown (none when the document has no errata counts)."""
    e = doc.get("errata") or {}
    if "by_source" not in e:
        return []
    per = ", ".join(f"{md_cell(k)} {v['wrong']} wrong / {v['doubtful']} doubtful" for k, v in e["by_source"].items())
    marked = ", ".join(f"{md_cell(k)} {v}" for k, v in e.get("marked_test_pairs", {}).items())
    return [
        f"Errata in force: {e['wrong']} wrong, {e['doubtful']} doubtful ({per or 'none'}); test pairs of this "
        f"edition they mark: {marked or 'none'}."
    ]
