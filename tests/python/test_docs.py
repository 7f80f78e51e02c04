"""Keeps the examples in docs/language.md, README.md, docs/migrating.md and
docs/troubleshooting.md true: every fenced code block of cuk code with print() calls is
run with cukc, and each `print(...);  // expected` comment (continued on following `//`
lines for multi-line output) must match what it prints. The ```python blocks of
docs/python.md, docs/migrating.md and docs/troubleshooting.md written as interactive
sessions (>>> lines) run as doctests against the built extension. The shell transcripts
of docs/troubleshooting.md (`$ command` lines, then what it printed) run in a scratch
directory and must print what they show."""
import doctest
import os
import re
import subprocess

import pytest

import cukpath  # the cuk package (for the Python examples) and the fake driver

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUKC = os.path.abspath(os.environ.get("CUKC") or os.path.join(ROOT, "build", "bin", "cukc"))


# An HTML comment on the line above a block says how the tests use it (the pages show
# nothing of it): `<!-- file: x.cuk -->` a file the page's transcripts use, `<!--
# transcript: NEEDS -->` a shell transcript, `<!-- session: NEEDS -->` a Python session
# that needs NEEDS (see NEEDS below).
MARK = re.compile(r"<!-- (file|transcript|session): ?([^>]*?) -->\n$")


def mark(text, start):
    """(kind, argument) of the marker comment just above the block at start, or None."""
    m = MARK.search(text[:start])
    return (m.group(1), m.group(2).strip()) if m else None


def blocks(path):
    """(line number, code) of every ``` block of cuk code (no language named, or `cuk`)
    that prints something, apart from the files of transcripts."""
    text = open(os.path.join(ROOT, path)).read()
    out = []
    for m in re.finditer(r"^```([a-z]*)\n(.*?)^```", text, re.S | re.M):
        code = m.group(2)
        if (m.group(1) in ("", "cuk") and "print(" in code and not code.lstrip().startswith("$")
                and "error:" not in code and not mark(text, m.start())):
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


CASES = [(p, ln, code) for p in ("docs/language.md", "README.md", "docs/migrating.md", "docs/troubleshooting.md")
         for ln, code in blocks(p)]


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
    """(line number, code, needs) of every ```python block with >>> prompts (indented too,
    in a list item); needs is what its `<!-- session: NEEDS -->` marker names."""
    text = open(os.path.join(ROOT, path)).read()
    out = []
    for m in re.finditer(r"^ *```python\n(.*?)^ *```", text, re.S | re.M):
        if ">>>" in m.group(1):
            mk = mark(text, m.start())
            out.append((text[:m.start()].count("\n") + 1, m.group(1), mk[1] if mk and mk[0] == "session" else ""))
    return out


PY_PAGES = ("docs/python.md", "docs/migrating.md", "docs/troubleshooting.md")
PY_CASES = [(p, ln, code, needs) for p in PY_PAGES for ln, code, needs in python_sessions(p)]


@pytest.mark.parametrize("path", PY_PAGES)
def test_python_doc_has_sessions(path):
    assert any(p == path for p, _, _, _ in PY_CASES), "%s has no ```python block with >>> lines" % path


@pytest.mark.parametrize("path,line,code,needs", PY_CASES, ids=["%s:%d" % (p, l) for p, l, _, _ in PY_CASES])
def test_python_doc_session(path, line, code, needs):
    for need in needs.split():  # sessions need no files: no-driver only
        NEEDS[need](dict(os.environ), None)
    test = doctest.DocTestParser().get_doctest(code, {}, "%s:%d" % (path, line), os.path.join(ROOT, path), line)
    out = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=out.append)
    res = runner.summarize(verbose=False)
    assert res.attempted > 0
    assert res.failed == 0, "".join(out)


# ---- docs/troubleshooting.md's shell transcripts ----
#
# A transcript is a ``` block of `$ command` lines, each followed by what it printed
# (stdout and stderr together). It runs in a scratch directory T/work holding the page's
# `<!-- file: NAME -->` blocks, as one bash script (so `export` carries on), with cukc
# on the PATH, HOME=T/home/me and none of cuk's variables set; T is taken out of what
# it prints, so a path shows as /home/me/.cache/cuk. What its marker's NEEDS names is
# set up first, or the test is skipped where that cannot be had.

STAMP = "@@cuk-transcript@@"


def no_driver(env, work):
    """This machine has no libcuda.so.1 at all: what the no-GPU messages quote."""
    import cuk
    ok, why = cuk._cuk.gpu_available()
    if ok or not why.startswith("no CUDA driver found (libcuda.so.1): libcuda.so.1: cannot open shared object file"):
        pytest.skip("shows a machine without a CUDA driver; here: %s" % (why or "a GPU is usable"))


def fake_driver(env, work):
    """bench/fake_libcuda.c as the driver: a GPU whose kernels do not run."""
    env["CUK_LIBCUDA"] = cukpath.build_fake_driver(os.path.dirname(work))[1]


def stub_libcuda(env, work):
    if not os.path.exists("/usr/local/cuda/lib64/stubs/libcuda.so"):
        pytest.skip("no CUDA toolkit stub libcuda at /usr/local/cuda/lib64/stubs/libcuda.so")


def nvrtc(env, work):
    p = subprocess.run([CUKC, "emit-ptx", os.path.join(ROOT, "examples", "saxpy.cuk")], capture_output=True, text=True,
                       env=dict(env, CUK_DISABLE_DISK_CACHE="1"), timeout=300)
    if p.returncode != 0:
        pytest.skip("NVRTC is not usable here: %s" % p.stderr.strip())


def fnv1a(data, h=1469598103934665603):
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def bundles(env, work):
    """x.cukb built from x.cuk, old.cukb the same stamped as built by cuk 0.0.9 (its
    checksum made again: docs/internals.md, "Bundles"), bad.cukb with a byte flipped."""
    import struct
    nvrtc(env, work)
    subprocess.run([CUKC, "build", "x.cuk", "-o", "x.cukb", "--arch", "compute_80"], cwd=work, check=True,
                   env=dict(env, CUK_DISABLE_DISK_CACHE="1"), capture_output=True, timeout=300)
    b = bytearray(open(os.path.join(work, "x.cukb"), "rb").read())
    bad = bytearray(b)
    bad[len(b) // 2] ^= 0x5A
    b[8:24] = b"0.0.9".ljust(16, b"\0")
    b[40:48] = bytes(8)
    b[40:48] = struct.pack("<Q", fnv1a(bytes(b)))
    open(os.path.join(work, "old.cukb"), "wb").write(bytes(b))
    open(os.path.join(work, "bad.cukb"), "wb").write(bytes(bad))


NEEDS = {"no-driver": no_driver, "fake-driver": fake_driver, "stub-libcuda": stub_libcuda, "nvrtc": nvrtc,
         "bundles": bundles}


def transcripts(path):
    """The page's files {name: text}, and (line, needs, [(command, [expected lines])]) of
    its transcripts."""
    text = open(os.path.join(ROOT, path)).read()
    files, out = {}, []
    for m in re.finditer(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        mk = mark(text, m.start())
        if mk and mk[0] == "file":
            files[mk[1]] = m.group(1)
        elif mk and mk[0] == "transcript":
            steps = []
            for line in m.group(1).splitlines():
                if line.startswith("$ "):
                    steps.append((line[2:], []))
                else:
                    assert steps, "%s:%d: a transcript starts with a $ line" % (path, text[:m.start()].count("\n") + 1)
                    steps[-1][1].append(line)
            out.append((text[:m.start()].count("\n") + 1, mk[1], steps))
    return files, out


def run_transcript(path, needs, steps, files, tmp):
    """What each command of a transcript prints, as lines (the setup of NEEDS fills no
    cache the transcript could show)."""
    if not os.path.exists(CUKC):
        pytest.skip("cukc is not built (%s); run `make build`" % CUKC)
    work, home = os.path.join(tmp, "work"), os.path.join(tmp, "home", "me")
    os.makedirs(work)
    os.makedirs(home)
    for name, body in files.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUK_") and k not in ("XDG_CACHE_HOME", "CUDA_HOME")}
    env.update(HOME=home, PATH=os.path.dirname(CUKC) + os.pathsep + env.get("PATH", "/usr/bin:/bin"))
    for need in needs.split():
        NEEDS[need](env, work)
    script = "exec 2>&1\n" + "".join("%s\necho %s\n" % (cmd, STAMP) for cmd, _ in steps)
    p = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    got = p.stdout.replace(tmp, "").split(STAMP + "\n")[:-1]
    return [g.splitlines() for g in got]


TS_FILES, TS_CASES = transcripts("docs/troubleshooting.md")


def test_troubleshooting_has_transcripts():
    assert TS_CASES and "x.cuk" in TS_FILES


@pytest.mark.parametrize("line,needs,steps", TS_CASES, ids=["docs/troubleshooting.md:%d" % c[0] for c in TS_CASES])
def test_troubleshooting_transcript(line, needs, steps, tmp_path):
    got = run_transcript("docs/troubleshooting.md", needs, steps, TS_FILES, str(tmp_path))

    def sizeless(lines):
        # the size of compiled kernels changes with NVRTC and with the compiler: a
        # `cukc cache stats` line "bytes: N" is compared without its number
        return [re.sub(r"^bytes: \d+$", "bytes: N", x.rstrip()) for x in lines]

    for (cmd, want), out in zip(steps, got):
        assert sizeless(out) == sizeless(want), (
            "docs/troubleshooting.md:%d: `%s` printed\n%s" % (line, cmd, "\n".join(out)))
    assert len(got) == len(steps)


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
