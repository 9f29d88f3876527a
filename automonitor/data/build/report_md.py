"""Markdown of the build's gate counts (``automonitor build --report-markdown``): the gate tables of docs/explanation/editions.md
are this output, pasted between marker comments and checked by a test (``tests/data/test_readme_tables.py``).

Three parts, from a build report (:func:`automonitor.data.build.build` / :func:`plan_build`):

1. quality gates: one row per gate step, one column per source (pairs each step counted);
2. the safety-code analyser gate per source and language: pairs loaded and what each step removed;
3. errata applied per source and the problem-family split.
"""

from __future__ import annotations

from typing import Any

from automonitor.escaping import md_cell as _md

_STEP_ORDER = (
    "pairs loaded",
    "dropped: equal after whitespace normalisation",
    "to candidates: <= 3 tokens differ",
    "dropped: test code",
    "to candidates: no static analyser for the language",
    "to candidates: analyser does not confirm the fix",
    "kept: analyser confirms the fix",
)


def _order(keys: set[str]) -> list[str]:
    known = [k for k in _STEP_ORDER if k in keys]
    return known + sorted(keys - set(known))


def gates_markdown(report: dict[str, Any]) -> str:
    """The three gate tables of a build report as markdown (every value escaped); deterministic for a
    report."""
    gates = {k: v for k, v in report.get("gates", {}).items() if k != "hh_rlhf conversation split"}
    sources = sorted(gates)
    steps = sorted({s for v in gates.values() for s in v})
    lines = [
        f"Quality gates at seed {report.get('seed')} (pairs per source; `automonitor build --report-markdown`):",
        "",
        "| gate | " + " | ".join(_md(s) for s in sources) + " |",
        "|---|" + "---:|" * len(sources),
    ]
    for step in steps:
        lines.append(f"| {_md(step)} | " + " | ".join(str(gates[s].get(step, 0)) for s in sources) + " |")
    conv = report.get("gates", {}).get("hh_rlhf conversation split")
    if conv:
        lines += [
            "",
            f"hh_rlhf split by conversation: {conv['conversations']} conversations, "
            f"{conv['train_pairs_dropped_same_conversation']} train pairs dropped (same conversation as test).",
        ]
    code = report.get("code_gates", {})
    if code:
        steps = _order({s for langs in code.values() for c in langs.values() for s in c})
        lines += [
            "",
            "Safety-code gate by static analysers (Bandit for Python, flawfinder for C/C++), per source and language:",
            "",
            "| source | language | " + " | ".join(_md(s) for s in steps) + " |",
            "|---|---|" + "---:|" * len(steps),
        ]
        for src in sorted(code):
            for lang in sorted(code[src]):
                c = code[src][lang]
                lines.append(f"| {_md(src)} | {_md(lang)} | " + " | ".join(str(c.get(s, 0)) for s in steps) + " |")
    errata = report.get("errata")
    if errata:
        per = ", ".join(
            f"{_md(k)} {v['wrong']} wrong / {v['doubtful']} doubtful" for k, v in errata["by_source"].items()
        )
        lines += [
            "",
            f"Errata applied (`seeds/errata.jsonl`): {errata.get('applied', 0)} of {errata['wrong'] + errata['doubtful']} "
            f"({per or 'none'}); {errata.get('in_paper_test', 0)} marked in the paper test set; "
            f"{len(errata.get('unmatched', []))} on pairs the build no longer has; "
            f"{len(errata.get('not_stored', {}))} on pairs the build drops (a sample held by another pair, or a "
            "request shared with the test set; `automonitor stats` says which).",
        ]
    fam = report.get("families")
    if fam:
        lines += [
            "",
            f"Problem families: {fam['families']} ({fam['multi_pair_families']} with more than one pair); "
            f"{fam['train_dropped_same_family']} train pairs dropped for sharing a family with test or "
            f"candidates; {fam['shared_train_test']} families in both train and test.",
        ]
    return "\n".join(lines) + "\n"
