"""Label provenance and errata as visible badges on the drill-down."""

from __future__ import annotations

import json

from automonitor import views


def test_errata_are_read_by_pair_id_and_shown_escaped(tmp_path, monkeypatch):
    f = tmp_path / "errata.jsonl"
    rows = [
        {
            "pair_id": "pp-1",
            "source": "s",
            "verdict": "doubtful",
            "reason": "both <b>fine</b>",
            "reader": "ann",
            "date": "2026-12-01",
        },
        {
            "pair_id": "pp-2",
            "source": "s",
            "verdict": "wrong",
            "reason": "swapped",
            "reader": "bo",
            "date": "2026-12-01",
        },
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(f))
    assert [e["reason"] for e in views.provenance.errata_for("pp-1")] == ["both <b>fine</b>"]
    assert views.provenance.errata_for("pp-3") == []
    html = views.provenance_html("preference_pair", views.provenance.errata_for("pp-1"))
    assert "label provenance: preference_pair" in html and "erratum: label doubtful" in html
    assert "&lt;b&gt;fine&lt;/b&gt;" in html and "<b>fine" not in html
    assert "the worse side is not always misbehavior" in html
    plain = views.provenance_html("human_per_response", [])
    assert "erratum" not in plain and "#1b7f3b" in plain
    assert views.provenance.errata_for("pp-1", path=tmp_path / "missing.jsonl") == []


def test_trade_off_audit_flags_pick_the_slices_of_the_view():
    doc = {
        "slices": [
            {
                "source": "a",
                "category": "sycophancy_bias",
                "task": "qa",
                "pairs": 40,
                "flagged": True,
                "baselines": {"length": 0.62, "tfidf": 0.98},
            },
            {
                "source": "b",
                "category": "specification_gaming",
                "task": "code",
                "pairs": 30,
                "flagged": True,
                "baselines": {"length": 0.05, "tfidf": 0.7},
            },
            {
                "source": "c",
                "category": "sycophancy_bias",
                "task": "qa",
                "pairs": 30,
                "flagged": False,
                "baselines": {"length": 0.99},
            },
        ]
    }
    flags = views.tradeoff.audit_flags(doc, None, None)
    assert [f["source"] for f in flags] == ["a", "b"]  # |0.98 - 0.5| > |0.05 - 0.5|
    assert flags[0]["note"] == "a trivial baseline (tfidf) reaches AUROC 0.98 here"
    assert [f["source"] for f in views.tradeoff.audit_flags(doc, "sycophancy_bias", "qa")] == ["a"]
    assert (
        views.tradeoff.audit_flags(doc, "safety_permission", None) == []
        and views.tradeoff.audit_flags(None, None, None) == []
    )


def test_an_erratum_written_with_the_upstream_id_shows_on_the_renamed_pair(tmp_path, monkeypatch):
    """Errata may name a pair by its id before pair ids were renamed (``meta.upstream_id``), as the build
    matches them; the drill-down's badge finds them the same way."""
    f = tmp_path / "errata.jsonl"
    row = {"pair_id": "safecoder:train:112", "source": "safecoder", "verdict": "wrong", "reason": "same sink"}
    f.write_text(json.dumps({**row, "reader": "r", "date": "2026-12-01"}) + "\n")
    monkeypatch.setenv("AUTOMONITOR_ERRATA", str(f))
    sample = {"pair_id": "safecoder:cwe-502-0123456789", "meta": {"upstream_id": "safecoder:train:112"}}
    assert [e["reason"] for e in views.sample_errata(sample)] == ["same sink"]
    assert views.sample_errata({"pair_id": "safecoder:cwe-502-0123456789", "meta": {}}) == []


def _doc(*slices):
    return {
        "slices": [
            {"source": src, "category": c, "task": t, "pairs": 20, "flagged": True, "baselines": {"length": a}}
            for src, c, t, a in slices
        ]
    }


def test_trade_off_audits_the_edition_shown_and_every_edition_of_all_editions():
    """The trade-off's audit flags are those of the edition shown; with "all editions" the
    audit of each edition drawn (it used to audit paper only), every badge naming its edition."""
    assert views.audit_editions("verified", ["paper"]) == ["verified"]
    assert views.audit_editions(None, ["verified", "paper", "verified", "mine", None]) == ["paper", "verified", "mine"]
    assert views.audit_editions(None, ["hard"]) == ["hard"]  # not paper when only hard runs are drawn
    assert views.audit_editions(None, []) == ["paper"]
    docs = {
        "paper": _doc(("<b>src</b>", "sycophancy_bias", "qa", 0.9)),
        "verified": _doc(("v-src", "sycophancy_bias", "qa", 0.98), ("v-code", "specification_gaming", "code", 0.95)),
        "hard": None,  # an edition that cannot be audited adds nothing
    }
    flags = views.edition_audit_flags(docs, None, None)
    assert [(f["edition"], f["source"]) for f in flags] == [
        ("verified", "v-src"),
        ("verified", "v-code"),
        ("paper", "<b>src</b>"),
    ]
    assert flags[0]["badge"] == "audit flag (verified): v-src · sycophancy_bias / qa"
    assert [f["edition"] for f in views.edition_audit_flags(docs, "sycophancy_bias", None)] == ["verified", "paper"]
    html = views.audit_badges_html(flags)
    assert html.count("<span") == 3 and 'data-edition="paper"' in html and 'data-edition="verified"' in html
    assert "&lt;b&gt;src&lt;/b&gt;" in html and "<b>src" not in html  # source names are escaped
    one = views.audit_badges_html(flags, limit=1)  # the badges not drawn are counted, never dropped silently
    assert one.count("data-edition=") == 1 and 'data-testid="audit-flags-more"' in one and "+2 more" in one
    assert "more" not in html and views.audit_badges_html([]) == ""
    note = views.audit_flags_note(flags, ["paper", "verified", "hard"])
    assert note.startswith("Benchmark health (editions paper, verified, hard): in 3 slice(s) of this view")
    assert "(1 in paper; 2 in verified)" in note
    assert "a trivial baseline (length) reaches AUROC 0.98 here (edition verified; the strongest;" in note
    one = views.audit_flags_note(views.edition_audit_flags({"paper": docs["paper"]}, None, None), ["paper"])
    assert one == (
        "Benchmark health (edition paper): in 1 slice(s) of this view a trivial baseline (length) reaches "
        "AUROC 0.90 here (edition paper), so MR/FAR here partly measure a shortcut, not monitoring."
    )
    assert views.audit_flags_note([], ["paper"]) == ""
