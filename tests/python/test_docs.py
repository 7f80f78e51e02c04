"""Keeps the examples in docs/language.md and README.md true: every fenced code block
with print() calls is run with cukc, and each `print(...);  // expected` comment
(continued on following `//` lines for multi-line output) must match what it prints.
The ```python blocks of docs/python.md written as interactive sessions (>>> lines) run
as doctests against the built extension."""
import doctest
import os
import re
import subprocess

import pytest

import cukpath  # noqa: F401  (the cuk package, for the Python examples)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUKC = os.path.abspath(os.environ.get("CUKC") or os.path.join(ROOT, "build", "bin", "cukc"))


def blocks(path):
    """(line number, code) of every ``` block that prints something."""
    text = open(os.path.join(ROOT, path)).read()
    out = []
    for m in re.finditer(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        code = m.group(1)
        if "print(" in code and not code.lstrip().startswith("$") and "error:" not in code:
            out.append((text[:m.start()].count("\n") + 1, code))
    return out


def split(code):
    """Splits a snippet into top-level fn definitions and main-body statements."""
    fns, body, depth, in_fn = [], [], 0, False
    for line in code.splitlines():
        if depth == 0 and line.startswith("fn "):
            in_fn = True
        (fns if in_fn else body).append(line)
        depth += line.count("{") - line.count("}")
        if in_fn and depth == 0 and (line.rstrip().endswith("}") or line.rstrip().endswith(";")):
            in_fn = False
    return fns, body


def expectations(body):
    """For each print() statement, the expected output lines from its comments (or None)."""
    exp, cur = [], None
    for line in body:
        m = re.match(r"\s*(print\(.*\);)\s*(?://\s?(.*))?$", line)
        if m and "print(" in line.split("//")[0]:
            cur = [re.sub(r"\s+\(.*\)$", "", m.group(2).strip())] if m.group(2) is not None else None
            exp.append(cur)
            continue
        c = re.match(r"\s*//\s?(.*)$", line)
        if c and cur is not None and c.group(1).strip().startswith(("[", "]")):
            cur.append(c.group(1).strip())
        elif c is None:
            cur = None
    return exp


def norm(s):
    return re.sub(r"\s+", " ", s.strip())


CASES = [(p, ln, code) for p in ("docs/language.md", "README.md") for ln, code in blocks(p)]


@pytest.mark.parametrize("path,line,code", CASES, ids=["%s:%d" % (p, l) for p, l, _ in CASES])
def test_doc_example(path, line, code, tmp_path):
    if not os.path.exists(CUKC):
        pytest.skip("cukc is not built (%s); run `make build`" % CUKC)
    if re.search(r"fn main\(\s*[^)\s]", code):
        pytest.skip("main takes parameters")
    if "fn main" in code:
        prog = code
        body = code.splitlines()
    else:
        fns, body = split(code)
        prog = "\n".join(fns) + "\nfn main() {\n" + "\n".join(body) + "\n}\n"
    src = tmp_path / "doc.cuk"
    src.write_text(prog)
    p = subprocess.run([CUKC, "run", str(src), "--device", "cpu"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, "%s:%d does not run:\n%s\n%s" % (path, line, prog, p.stderr)
    exp = expectations(body)
    if not any(exp):
        return
    # Each print() writes as many lines as its value has rows; line up the outputs by
    # counting the lines of the expectations that exist and skipping the rest.
    out = p.stdout.splitlines()
    k = 0
    for e in exp:
        if e is None:
            # unknown length: only safe when nothing with an expectation follows
            assert all(x is None for x in exp[exp.index(e) + 1:]) or k < len(out), path
            if any(x is not None for x in exp[exp.index(e) + 1:]):
                pytest.skip("%s:%d: a print without an expected output precedes checked ones" % (path, line))
            break
        got = out[k:k + len(e)]
        assert [norm(g) for g in got] == [norm(x) for x in e], "%s:%d:\n%s" % (path, line, prog)
        k += len(e)


def python_sessions(path):
    """(line number, code) of every ```python block with >>> prompts (indented too, in a
    list item)."""
    text = open(os.path.join(ROOT, path)).read()
    return [(text[:m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"^ *```python\n(.*?)^ *```", text, re.S | re.M) if ">>>" in m.group(1)]


PY_CASES = python_sessions("docs/python.md")


def test_python_doc_has_sessions():
    assert PY_CASES, "docs/python.md has no ```python block with >>> lines"


@pytest.mark.parametrize("line,code", PY_CASES, ids=["docs/python.md:%d" % l for l, _ in PY_CASES])
def test_python_doc_session(line, code):
    test = doctest.DocTestParser().get_doctest(code, {}, "docs/python.md:%d" % line, os.path.join(ROOT, "docs/python.md"),
                                               line)
    out = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=out.append)
    res = runner.summarize(verbose=False)
    assert res.attempted > 0
    assert res.failed == 0, "".join(out)


# ---- "What cuk has instead": compiler/instead.h and its copy in docs/language.md ----

INSTEAD_ROW = re.compile(r'X\("([^"]+)", "([^"]+)", (USE|PLANNED|NOTE), "((?:[^"\\]|\\.)*)"\)')


def instead_table():
    """(name, from, kind, advice) of every row of compiler/instead.h."""
    text = open(os.path.join(ROOT, "compiler", "instead.h")).read()
    body = text[text.index("#define INSTEAD(X)"):text.index("typedef enum")]
    rows = INSTEAD_ROW.findall(body)
    assert len(rows) == body.count('X("'), "a row of compiler/instead.h is not X(\"name\", \"from\", KIND, \"advice\")"
    return rows


def instead_doc():
    """{name: (from, cell text without backticks)} of the table in docs/language.md."""
    text = open(os.path.join(ROOT, "docs", "language.md")).read()
    sec = text[text.index("## What cuk has instead"):]
    sec = sec[:sec.index("\n## ")]
    out = {}
    for line in sec.splitlines():
        m = re.match(r"\| `([^`]+)` \| ([^|]+) \| (.*) \|$", line)
        if m:
            assert m.group(1) not in out, "%s is twice in the table" % m.group(1)
            out[m.group(1)] = (m.group(2).strip(), m.group(3).replace("\\|", "|").replace("`", ""))
    return out


def test_instead_doc_matches_compiler():
    doc = instead_doc()
    want = {}
    for name, frm, kind, advice in instead_table():
        want[name] = (frm, ("planned: " if kind == "PLANNED" else "") + advice)
    assert sorted(doc) == sorted(want), "names only in the doc: %s; only in compiler/instead.h: %s" % (
        sorted(set(doc) - set(want)), sorted(set(want) - set(doc)))
    for name in want:
        assert doc[name] == want[name], "%s: docs/language.md says %r, compiler/instead.h %r" % (name, doc[name], want[name])


@pytest.mark.parametrize("name,frm,kind,advice", instead_table(), ids=[r[0] for r in instead_table()])
def test_instead_message(name, frm, kind, advice, tmp_path):
    if not os.path.exists(CUKC):
        pytest.skip("cukc is not built (%s); run `make build`" % CUKC)
    src = tmp_path / "t.cuk"
    src.write_text("fn main() {\n    print(%s(ones(3)));\n}\n" % name)
    p = subprocess.run([CUKC, "check", str(src)], capture_output=True, text=True, timeout=60)
    first = p.stderr.splitlines()[0] if p.stderr else ""
    if kind == "PLANNED":
        msg = "'%s' is not available yet in cuk (planned: %s; see docs/language.md)" % (name, advice)
    elif kind == "USE":
        msg = "'%s' is not a cuk function; write %s" % (name, advice)
    else:
        msg = "'%s' is not a cuk function; %s" % (name, advice)
    assert p.returncode == 1 and first.endswith("t.cuk:2:11: error: " + msg), (
        "%s no longer gets its advice (did it become a cuk function? then remove its row from "
        "compiler/instead.h and docs/language.md):\n%s" % (name, p.stderr))
