#!/usr/bin/env python3
"""Checks that #include lines point down the layers only (docs/internals.md, "Layers",
draws them): tools, python -> api -> exec -> compiler -> lang, with api
and exec also over runtime, and runtime knowing nothing of the language. kernels/ holds
CUDA C building blocks that the compiler embeds and the backends compile; any layer
from compiler up may include them.

Prints one line per include that points up or sideways and exits 1 if there is any;
prints "layers: N includes checked, all point down" otherwise.
Usage: scripts/layers.py [REPO]"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))

# What each layer may include, besides itself.
ALLOWED = {
    "lang": set(),
    "compiler": {"lang", "kernels"},
    "exec": {"compiler", "lang", "kernels", "runtime"},
    "runtime": set(),
    "api": {"exec", "compiler", "lang", "kernels", "runtime"},
    "tools": {"api", "exec", "compiler", "lang", "kernels", "runtime"},
    "python": {"api", "runtime"},
    "kernels": set(),
}
# Generated files (re2c, Lemon) live in the build tree and belong to lang/.
GENERATED = {"grammar.h": "lang", "lexer.c": "lang", "embedded.h": "lang"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    rel = os.path.relpath(path, ROOT)
    return rel.split(os.sep)[0]


def resolve(src, name):
    """The file a quoted include names: beside the includer, then from the root, then
    runtime/ (public headers include "cuk.h")."""
    for base in (os.path.dirname(src), ROOT, os.path.join(ROOT, "runtime")):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None


def main():
    bad, n = [], 0
    for layer in ALLOWED:
        top = os.path.join(ROOT, layer)
        for dirpath, _, files in os.walk(top):
            for fn in files:
                if not fn.endswith((".c", ".h", ".cuh", ".re", ".y")):
                    continue
                src = os.path.join(dirpath, fn)
                with open(src, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    n += 1
                    name = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    target = resolve(src, name)
                    if target is None:
                        to = GENERATED.get(os.path.basename(name))
                        if to is None:
                            bad.append(f"{os.path.relpath(src, ROOT)}:{line}: includes \"{name}\", which is not in the tree")
                            continue
                    else:
                        to = layer_of(target)
                    if to != layer and to not in ALLOWED[layer]:
                        bad.append(f"{os.path.relpath(src, ROOT)}:{line}: {layer}/ includes \"{name}\" of {to}/, "
                                   f"which is not below it")
    for b in bad:
        print(b)
    if bad:
        print(f"layers: {len(bad)} of {n} includes point up or sideways")
        return 1
    print(f"layers: {n} includes checked, all point down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
