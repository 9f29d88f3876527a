"""A derived run's label on the MR-FAR plane names the runs it derives from (fresh-user trial of `make demo`:
after the LLM phase the plane had two "cascade direct" and two "ensemble OR direct", one built on the probe,
one on gemma). The labels come from ``views.honest_points`` (the Trade-off page and the HTML report draw
the same points)."""

from __future__ import annotations

import pandas as pd

from automonitor.views.honest_points import derived_name, honest_points, short_label

# the monitor names `scripts/demo_runs.sh` gives its derived runs (fast phase on the probe, llm phase on gemma)
PROBE, GEMMA, RULES = "probe:tfidf-lr@8fd0c6", "llamacpp:gemma3-270m@77aa01", "rules:rules-v1@b84c59"
DEMO = {
    "drv_cas_1_aaaaaa": f"cascade ({PROBE} then {RULES}; 0.2/0.8)",
    "drv_cas_2_bbbbbb": f"cascade ({GEMMA} then {RULES}; 0.2/0.8)",
    "drv_ens_1_cccccc": f"ensemble OR ({RULES} + {PROBE})",
    "drv_ens_2_dddddd": f"ensemble OR ({RULES} + {GEMMA})",
    "drv_thr_1_eeeeee": f"thresholds far<=0.2 by category ({PROBE})",
    "drv_thr_2_ffffff": f"thresholds far<=0.2 by category ({GEMMA})",
}


def test_a_derived_label_names_its_recipe_and_inputs():
    assert short_label(DEMO["drv_cas_1_aaaaaa"], "direct") == "cascade tfidf-lr → rules-v1 direct"
    assert short_label(DEMO["drv_cas_2_bbbbbb"], "direct") == "cascade gemma3-270m → rules-v1 direct"
    assert short_label(DEMO["drv_ens_2_dddddd"], "direct", "derived") == "OR: rules-v1 + gemma3-270m direct"
    assert short_label(DEMO["drv_thr_1_eeeeee"], "direct") == "thresholds far<=0.2: tfidf-lr direct"
    labels = [short_label(m, "direct") for m in DEMO.values()]
    assert len(set(labels)) == len(labels), labels
    # a long input name is cut, the whole stays short
    long = derived_name(f"ensemble OR (openai:meta-llama/Llama-3.1-70B-Instruct-Turbo@123456 + {GEMMA} + {PROBE})")
    assert len(long) <= 40 and long.startswith("OR: Llama-3.1-70B…")


def _points(runs: dict[str, str]) -> pd.DataFrame:
    n = len(runs)
    return pd.DataFrame(
        {
            "run_id": list(runs),
            "monitor": list(runs.values()),
            "template": ["direct"] * n,
            "mr": [0.1 * (i + 1) for i in range(n)],
            "far": [0.05 * (i + 1) for i in range(n)],
            "tp": [50] * n,
            "fn": [50] * n,
            "fp": [50] * n,
            "tn": [50] * n,
        }
    )


def test_the_plane_never_draws_two_derived_runs_under_one_label():
    runs = {
        **DEMO,
        # the same recipe on two runs of one monitor (llamacpp direct twice): the run id's end tells them apart
        "drv_cas_3_123456": f"cascade ({GEMMA} then {RULES}; 0.2/0.8)",
        "run_a": "llamacpp:gemma3-270m",
        "run_b": "llamacpp:gemma3-270m",
    }
    pts = honest_points(_points(runs), backends={r: "derived" for r in runs if r.startswith("drv")})
    by_id = dict(zip(pts["run_id"], pts["label"]))
    derived = [by_id[r] for r in runs if r.startswith("drv")]
    assert len(set(derived)) == len(derived), derived
    assert by_id["drv_cas_2_bbbbbb"] == "cascade gemma3-270m → rules-v1 direct #bbbbbb"
    assert by_id["drv_cas_3_123456"] == "cascade gemma3-270m → rules-v1 direct #123456"
    assert by_id["drv_cas_1_aaaaaa"] == "cascade tfidf-lr → rules-v1 direct"  # unique: no id
    # two measured runs of one monitor are told apart by their run ids too
    assert (by_id["run_a"], by_id["run_b"]) == ("gemma3-270m direct #run_a", "gemma3-270m direct #run_b")
