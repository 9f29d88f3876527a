"""The codemod that moved the 0.1 layout to the layout by step (run once, from the repository root, on
the 0.1 tree): ``git mv`` every module named in :data:`automonitor._compat.MOVED` and rewrite every
reference to it -- imports (``from automonitor import metrics`` included), dotted names in strings and
docs, slash paths -- in the repository's text files. On today's tree it moves nothing. Kept as the record
of how the move was made; hand edits after it broke the three import cycles."""

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from automonitor._compat import MOVED  # noqa: E402  the one map of old -> new paths

ROOT = Path(".").resolve()
ORDER = sorted(MOVED, key=len, reverse=True)


def new(name: str) -> str:
    for old in ORDER:
        if name == old or name.startswith(old + "."):
            return MOVED[old] + name[len(old) :]
    return name


def mod_path(name: str) -> Path | None:
    p = ROOT / Path(*name.split("."))
    if p.is_dir():
        return p
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    return None


# 1. moves (whole packages first, then files whose parent already moved are handled by order)
moves = []
for old in sorted(MOVED, key=len):  # parents before children? children of moved dirs (workbench.*) first
    pass
for old in sorted(MOVED, key=lambda o: -o.count(".")):  # deepest first: workbench.x before workbench
    src = mod_path(old)
    if src is None:
        continue
    tgt_name = MOVED[old]
    dst = ROOT / Path(*tgt_name.split("."))
    if src.is_file():
        dst = dst.with_suffix(".py")
    if old == "automonitor.annotation_queries":
        subprocess.run(["git", "rm", "-q", str(src)], check=True)
        continue
    if dst.exists() and src.is_dir():
        # merge a package into an existing one (workbench -> views): move remaining files
        for f in src.iterdir():
            if f.name == "__pycache__":
                continue
            if f.name == "__init__.py":
                subprocess.run(["git", "mv", str(f), str(dst / "_workbench_init.py")], check=True)
            else:
                subprocess.run(["git", "mv", str(f), str(dst / f.name)], check=True)
        continue
    if dst.exists():
        raise SystemExit(f"{dst} exists")
    if old == "automonitor.annotation_queries":
        subprocess.run(["git", "rm", "-q", str(src)], check=True)
        continue
    dst.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "mv", str(src), str(dst)], check=True)
for pkg in ("automonitor/data", "automonitor/runs", "automonitor/runs/probe"):
    init = ROOT / pkg / "__init__.py"
    if not init.exists():
        init.write_text('"""."""\n')
        subprocess.run(["git", "add", str(init)], check=True)
# 2. rewrite references
DOTTED = re.compile(r"\bautomonitor(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
SLASHED = re.compile(r"\bautomonitor(?:/[A-Za-z_][A-Za-z0-9_]*)+(?:\.py)?/?")
FROM_PKG = re.compile(r"^([ \t]*)from automonitor import (\([^)]*\)|[^\n]*)", re.M)


def fix_from_pkg(m: re.Match) -> str:
    indent, body = m.group(1), m.group(2)
    comment = ""
    raw = body.strip()
    if raw.startswith("("):
        raw = raw[1:-1]
    elif "#" in raw:
        raw, comment = raw.split("#", 1)
        comment = "  #" + comment
    items = [x.strip() for x in re.sub(r"#[^\n]*", "", raw).replace("\n", " ").split(",") if x.strip()]
    groups: dict[str, list[str]] = {}
    for it in items:
        parts = it.split()
        name, alias = parts[0], (parts[2] if len(parts) == 3 else None)
        target = new(f"automonitor.{name}")
        parent, _, leaf = target.rpartition(".")
        bound = alias or name
        entry = leaf if leaf == bound else f"{leaf} as {bound}"
        groups.setdefault(parent, []).append(entry)
    lines = [f"{indent}from {p} import {', '.join(es)}" for p, es in groups.items()]
    lines[0] += comment
    return "\n".join(lines)


def rewrite(text: str) -> str:
    text = FROM_PKG.sub(fix_from_pkg, text)
    text = DOTTED.sub(lambda m: new(m.group(0)), text)

    def slash(m):
        s = m.group(0)
        tail = ""
        if s.endswith("/"):
            s, tail = s[:-1], "/"
        ext = ""
        if s.endswith(".py"):
            s, ext = s[:-3], ".py"
        n = new(s.replace("/", "."))
        if n == s.replace("/", "."):
            return m.group(0)
        return n.replace(".", "/") + ext + tail

    return SLASHED.sub(slash, text)


files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
changed = 0
for f in files:
    p = ROOT / f
    if not p.is_file() or p.suffix not in {
        ".py",
        ".toml",
        ".md",
        ".sh",
        ".cfg",
        ".ini",
        ".txt",
        ".yml",
        ".yaml",
        ".json",
        "",
    }:
        continue
    if "migrations/versions" in f or f.startswith("tests/fixtures") and p.suffix == ".json":
        continue
    try:
        t = p.read_text()
    except UnicodeDecodeError:
        continue
    n = rewrite(t)
    if n != t:
        p.write_text(n)
        changed += 1
print("rewrote", changed, "files")
