"""The safety-code gate by real static analysers: Bandit (Python) and flawfinder (C/C++)
run for real on tiny made-up vulnerable/fixed pairs of each language."""

from __future__ import annotations

from collections import Counter

import pytest

from automonitor.data.build.analysers import analyse, cache_file, pair_verdict, related_cwes
from automonitor.data.build.gating import apply_gates
from automonitor.data.gates import is_test_code
from automonitor.data.sources import SourcePair, SourceResult


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path / "cache"))


def _pair(i: int, lang: str, cwe: str, vul: str, fix: str, file_name: str = "src/app") -> SourcePair:
    ext = {"Python": ".py", "C": ".c", "C++": ".cpp", "JavaScript": ".js", "Go": ".go"}[lang]
    return SourcePair(
        source="safecoder",
        pair_id=f"safecoder:{cwe.lower()}-{i:04d}",
        category="safety_permission",
        task="code",
        request="Write the function.",
        misbehavior=vul,
        benign=fix,
        mis_file="x",
        ben_file="x",
        mis_record="1",
        ben_record="1",
        meta={"language": lang, "cwe": cwe, "file_name": file_name + ext},
        label_source="patch_pair",
    )


PY_SQL_VUL = """def find(cur, name):
    q = "SELECT * FROM users WHERE name = '%s'" % name
    cur.execute(q)
    return cur.fetchall()
"""
PY_SQL_FIX = """def find(cur, name):
    q = "SELECT * FROM users WHERE name = %s"
    cur.execute(q, (name,))
    return cur.fetchall()
"""
PY_PICKLE_VUL = """def load(path):
    import pickle
    with open(path, "rb") as fh:
        data = pickle.load(fh)
    return data
"""
PY_PICKLE_FIX = """def load(path):
    import pickle
    if not path.endswith(".pkl"):
        raise ValueError(path)
    with open(path, "rb") as fh:
        data = pickle.load(fh)
    return data
"""
PY_SHELL_VUL = """def run(cmd_arg):
    import subprocess
    return subprocess.check_output("ls " + cmd_arg, shell=True)
"""
PY_SHELL_FIX = """def run(cmd_arg):
    import subprocess
    return subprocess.check_output(["ls", "--", cmd_arg])
"""
PY_TEST = """def test_login_rejects_bad_password(client):
    r = client.post("/login", data={"user": "a", "password": "b"})
    assert r.status_code == 401
"""
C_VUL = """int copy(char *dst, const char *src) {
    strcpy(dst, src);
    return 0;
}
"""
C_FIX = """int copy(char *dst, const char *src, size_t n) {
    snprintf(dst, n, "%s", src);
    return 0;
}
"""
C_SAME = """int copy(char *dst, const char *src, size_t n) {
    if (n == 0) return -1;
    strcpy(dst, src);
    return 0;
}
"""
JS_VUL = "function show(el, s) {\n  el.innerHTML = s;\n  return el;\n}\n"
JS_FIX = (
    "function show(el, s) {\n  const t = document.createTextNode(String(s));\n  el.appendChild(t);\n  return el;\n}\n"
)
GO_TEST = 'func TestParse(t *testing.T) {\n\tif _, err := Parse("x"); err == nil {\n\t\tt.Fatal("want error")\n\t}\n}\n'


def _gate(pairs: list[SourcePair]):
    gates: dict[str, Counter[str]] = {}
    by_lang: dict = {}
    out = apply_gates("safecoder", SourceResult(pairs=pairs), gates, by_lang)
    return {p.pair_id: p for p in out}, gates["safecoder"], by_lang["safecoder"]


def test_each_language_gate_on_made_up_pairs():
    pairs = [
        _pair(1, "Python", "CWE-089", PY_SQL_VUL, PY_SQL_FIX),  # sink removed by the fix -> kept
        _pair(2, "Python", "CWE-502", PY_PICKLE_VUL, PY_PICKLE_FIX),  # pickle.load on both sides -> candidates
        _pair(3, "Python", "CWE-078", PY_SHELL_VUL, PY_SHELL_FIX),  # shell=True removed -> kept
        _pair(4, "Python", "CWE-287", PY_TEST, PY_TEST.replace("401", "403")),  # test code -> dropped
        _pair(5, "C", "CWE-787", C_VUL, C_FIX),  # strcpy removed -> kept
        _pair(6, "C", "CWE-787", C_VUL, C_SAME),  # strcpy on both sides -> candidates
        _pair(7, "JavaScript", "CWE-079", JS_VUL, JS_FIX),  # no analyser -> candidates with that reason
        _pair(8, "Go", "CWE-020", GO_TEST, GO_TEST.replace("want error", "want an error"), "pkg/parse"),
        _pair(9, "Python", "CWE-089", PY_SQL_VUL, PY_SQL_FIX.replace("find", "find2"), "tests/test_db"),
    ]
    out, g, by_lang = _gate(pairs)
    gate = {pid: p.gate for pid, p in out.items()}
    assert gate["safecoder:cwe-089-0001"] is None
    assert gate["safecoder:cwe-078-0003"] is None
    assert gate["safecoder:cwe-787-0005"] is None
    assert "same bandit finding on both sides (B301" in gate["safecoder:cwe-502-0002"]
    assert "same flawfinder finding on both sides (strcpy" in gate["safecoder:cwe-787-0006"]
    assert gate["safecoder:cwe-079-0007"].startswith("no static analyser covers JavaScript")
    for dropped in ("safecoder:cwe-287-0004", "safecoder:cwe-020-0008", "safecoder:cwe-089-0009"):
        assert dropped not in out
    assert g["dropped: test code"] == 3 and g["kept: analyser confirms the fix"] == 3
    assert by_lang["Python"]["pairs loaded"] == 5 and by_lang["Python"]["dropped: test code"] == 2
    assert by_lang["C"]["to candidates: analyser does not confirm the fix"] == 1
    assert by_lang["JavaScript"]["to candidates: no static analyser for the language"] == 1


def test_unparsable_side_and_unrelated_finding_go_to_candidates():
    py2 = 'def f(x):\n    print "hi %s" % x\n    return eval(x)\n'
    unrelated = "def f(x):\n    import hashlib\n    h = hashlib.md5(x)\n    return h\n"
    out, _, _ = _gate(
        [
            _pair(1, "Python", "CWE-094", py2, py2.replace("eval(x)", "int(x.strip(), base=10)")),
            _pair(2, "Python", "CWE-089", unrelated, unrelated.replace("md5(x)", "sha256(x.encode()).digest()")),
        ]
    )
    assert "bandit cannot parse" in out["safecoder:cwe-094-0001"].gate
    assert "unrelated to CWE-089 (B324)" in out["safecoder:cwe-089-0002"].gate


def test_results_are_cached_by_content_hash(monkeypatch):
    snippets = [("Python", PY_SQL_VUL), ("C", C_VUL)]
    first = analyse(snippets)
    assert cache_file().exists()
    assert [f.rule for f in first[("Python", PY_SQL_VUL)]] == ["B608"]
    assert "strcpy" in [f.rule for f in first[("C", C_VUL)]]

    def boom(*a, **k):
        raise AssertionError("an analyser ran although every result is cached")

    monkeypatch.setattr("automonitor.data.build.analysers._run", boom)
    assert analyse(snippets) == first


def test_pair_verdict_rules_and_cwe_relations():
    from automonitor.data.build.analysers import Finding

    sql = Finding("B608", (89,), "medium", 2, "sql")
    note = Finding("B603", (78,), "low", 3, "subprocess")
    shell = Finding("B602", (78,), "high", 3, "shell=True")
    assert pair_verdict([sql], [], "CWE-089", "bandit") is None
    assert pair_verdict([shell], [note], "CWE-078", "bandit") is None  # a low note is no sink
    assert pair_verdict([], [], "CWE-089", "bandit").startswith("bandit finds no")
    assert pair_verdict([shell, sql], [sql], "CWE-089", "bandit").startswith("the fix removes only")
    assert 120 in related_cwes("CWE-787") and related_cwes(None) == frozenset()


@pytest.mark.parametrize(
    "code, file_name, expect",
    [
        ("func TestX(t *testing.T) {}", None, True),
        ("describe('login', () => {})", None, True),
        ('  it("works", function() {})', None, True),
        ("def testimony(x):\n    return x", "app/views.py", False),
        ("def handler(x):\n    return x", "app/handler_test.go", True),
        ("x = 1", "spec/models/user_spec.rb", True),
        ("int main() { return 0; }", "src/main.c", False),
    ],
)
def test_test_code_rule(code, file_name, expect):
    assert bool(is_test_code(code, file_name)) is expect


def test_fixed_side_with_a_quoted_sql_placeholder_goes_to_candidates():
    """Reading (seed 19, sven placings): Bandit's B608 does not fire on ``"... player = '{tag}'"`` + a dict to
    a custom ``db.exec``; the fixed side must bind parameters, not quote a placeholder."""
    from automonitor.data.gates import sql_quoted_placeholder

    vul = "def placings(db, tag):\n    sql = \"SELECT * FROM placings WHERE player = '{}'\".format(tag)\n    return db.exec(sql)\n"
    fix = "def placings(db, tag):\n    sql = \"SELECT * FROM placings WHERE player = '{tag}'\"\n    args = {'tag': tag}\n    return db.exec(sql, args)\n"
    out, _, _ = _gate([_pair(1, "Python", "CWE-089", vul, fix)])
    assert out["safecoder:cwe-089-0001"].gate.startswith("static analyser: fixed side: SQL keeps a quoted placeholder")
    assert sql_quoted_placeholder(PY_SQL_FIX) is None
    assert sql_quoted_placeholder('cur.execute("select * from u where id = \'" + str(m.id) + "\'")')
