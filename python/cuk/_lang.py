"""PyCUDA-layout kernels on the language's own kernels: a C expression of PyCUDA's
ElementwiseKernel, ReductionKernel and scan kernels (``z[i] = a*x[i] + y[i]``,
``x[i]*y[i]`` with ``a+b``) becomes the body of a .cuk function when it uses only what both languages read
the same way (arithmetic, comparisons, ``?:``, the math functions below, the kernel's
arguments with ``[i]``); anything else (a preamble, C casts, other functions, several
statements, ``range=``) stays raw CUDA C. Each returns None when it cannot translate or
the result does not compile."""
import re

import numpy as np

CUK_TYPES = {"bool": "bool", "float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "uint32": "u32",
             "uint64": "u64"}
# C function -> cuk builtin (the same value for the same arguments)
_FUNCS = {"sqrt": "sqrt", "sqrtf": "sqrt", "exp": "exp", "expf": "exp", "log": "log", "logf": "log", "sin": "sin",
          "sinf": "sin", "cos": "cos", "cosf": "cos", "tan": "tan", "tanf": "tan", "tanh": "tanh", "tanhf": "tanh",
          "fabs": "abs", "fabsf": "abs", "abs": "abs", "fmax": "maximum", "fmaxf": "maximum", "max": "maximum",
          "fmin": "minimum", "fminf": "minimum", "min": "minimum", "floor": "floor", "floorf": "floor", "ceil": "ceil",
          "ceilf": "ceil"}
_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fFuUlL]*|([A-Za-z_]\w*)|"
                    r"(<=|>=|==|!=|&&|\|\||[-+*/%()<>?:!,\[\]]))")


def c_to_cuk(expr, vectors, scalars, extra=(), rename=None):
    """expr with vector[i] read as the element, scalars and extra names as they are (each
    argument as rename names it), or None."""
    rename = rename or {}
    out, pos, s = [], 0, expr.strip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            return None
        num, name, op = m.groups()
        pos = m.end()
        if num is not None:
            out.append(num)
        elif name is not None:
            if name in vectors:
                m2 = re.compile(r"\s*\[\s*i\s*\]").match(s, pos)
                if not m2:
                    return None
                pos = m2.end()
                out.append(rename.get(name, name))
            elif name in scalars or name in extra:
                out.append(rename.get(name, name))
            elif name in _FUNCS and re.compile(r"\s*\(").match(s, pos):
                out.append(_FUNCS[name])
            else:
                return None
        else:
            if op in "[]":
                return None
            out.append(op)
    return " ".join(out) if out else None


def number(text):
    """A C literal (neutral=) as cuk text, or None."""
    t = re.sub(r"\s+", "", str(text))
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[fFuUlL]*", t):
        return t.rstrip("fFuUlL")
    return {"INFINITY": "inf", "-INFINITY": "-inf", "+INFINITY": "inf", "HUGE_VALF": "inf",
            "-HUGE_VALF": "-inf", "HUGE_VAL": "inf", "-HUGE_VAL": "-inf"}.get(t)


def compile_fn(src):
    from . import _cuk
    from .gpuarray import backend
    try:
        return _cuk.compile(src, _cuk.BACKEND_GPU if backend() == "gpu" else _cuk.BACKEND_CPU,
                            "<pycuda-layout>").function("k")
    except Exception:  # noqa: BLE001  (not the language's: the raw kernel takes it)
        return None


def storage(v):
    """A GPUArray's memory (other arrays as they are)."""
    from .gpuarray import GPUArray
    return v._storage() if isinstance(v, GPUArray) else v


def values(arguments, args, names, n):
    """The call's values of the arguments named (arrays as their memory, scalars in their
    C type), or None when an array is not 1-D of n elements of its declared dtype (the
    raw kernel takes those)."""
    from .tools import VectorArg
    by = {a.name: (a, v) for a, v in zip(arguments, args)}
    vals = []
    for nm in names:
        a, v = by[nm]
        if isinstance(a, VectorArg):
            v = storage(v)
            if tuple(getattr(v, "shape", ())) != (n,) or np.dtype(getattr(v, "dtype", None)) != a.dtype:
                return None
        else:
            v = a.dtype.type(v)
        vals.append(v)
    return vals


def elementwise(arguments, operation, preamble, loop_prep, after_loop):
    """(fn, out_name, [argument names fn takes]) for ElementwiseKernel's operation, or None."""
    from .tools import VectorArg
    if (preamble or "").strip() or (loop_prep or "").strip() or (after_loop or "").strip():
        return None
    op = operation.strip().rstrip(";").strip()
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*\[\s*i\s*\]\s*=(?!=)(.*)", op, re.S)
    if not m or ";" in op:
        return None
    out, rhs = m.group(1), m.group(2)
    vecs = {a.name: a for a in arguments if isinstance(a, VectorArg)}
    scal = {a.name: a for a in arguments if not isinstance(a, VectorArg)}
    if out not in vecs or any(CUK_TYPES.get(np.dtype(a.dtype).name) is None for a in arguments):
        return None
    # every argument as p<k> in the .cuk source (C names may be cuk keywords: in, fn, ...)
    ren = {a.name: f"p{k}" for k, a in enumerate(arguments)}
    body = c_to_cuk(rhs, vecs, scal, rename=ren)
    if body is None:
        return None
    used = [a.name for a in arguments if ren[a.name] in body.split()]
    if not any(n in vecs for n in used):
        return None  # no array argument to give the size
    t = CUK_TYPES[np.dtype(vecs[out].dtype).name]
    fn = compile_fn(f"fn k({_params(used, vecs, scal, ren)}) -> {t}[cuk_n] = {t}({body});\n")
    return (fn, out, used) if fn is not None else None


def _params(used, vecs, scal, ren):
    return ", ".join(f"{ren[n]}: {CUK_TYPES[np.dtype((vecs.get(n) or scal.get(n)).dtype).name]}" +
                     ("[cuk_n]" if n in vecs else "") for n in used)


_REDUCE_BUILTIN = {"a+b": ("sum", "0"), "b+a": ("sum", "0"), "a*b": ("prod", "1"), "b*a": ("prod", "1")}


def reduction(dtype_out, neutral, reduce_expr, map_expr, arguments, preamble):
    """(fn, [argument names fn takes]) for ReductionKernel, or None."""
    from .tools import VectorArg
    if (preamble or "").strip():
        return None
    t = CUK_TYPES.get(np.dtype(dtype_out).name)
    vecs = {a.name: a for a in arguments if isinstance(a, VectorArg)}
    scal = {a.name: a for a in arguments if not isinstance(a, VectorArg)}
    if t is None or any(CUK_TYPES.get(np.dtype(a.dtype).name) is None for a in arguments):
        return None
    ren = {a.name: f"p{k}" for k, a in enumerate(arguments)}
    mapped = c_to_cuk(map_expr, vecs, scal, rename=ren)
    init = number(neutral)
    if mapped is None or init is None:
        return None
    r = re.sub(r"\s+", "", reduce_expr)
    b = _REDUCE_BUILTIN.get(r)
    if b and float(init) == float(b[1]):
        body = f"{b[0]}({t}({mapped}), keepdims=true)"
    else:
        lam = c_to_cuk(reduce_expr, (), (), ("a", "b"))
        if lam is None:
            return None
        body = f"reduce(|a, b| {lam}, {t}({init}), {t}({mapped}), keepdims=true)"
    used = [a.name for a in arguments if ren[a.name] in mapped.split()]
    if not any(n in vecs for n in used):
        return None
    fn = compile_fn(f"fn k({_params(used, vecs, scal, ren)}) -> {t}[1] = {body};\n")
    return (fn, used) if fn is not None else None


_SCAN_BUILTIN = {"a+b": "cumsum", "b+a": "cumsum", "a*b": "cumprod", "b*a": "cumprod", "max(a,b)": "cummax",
                 "max(b,a)": "cummax", "fmax(a,b)": "cummax", "fmaxf(a,b)": "cummax", "min(a,b)": "cummin",
                 "min(b,a)": "cummin", "fmin(a,b)": "cummin", "fminf(a,b)": "cummin"}


def scan(dtype, scan_expr, neutral, exclusive, preamble):
    """The function that scans x (InclusiveScanKernel, ExclusiveScanKernel), or None."""
    t = CUK_TYPES.get(np.dtype(dtype).name)
    if t is None or t == "bool" or (preamble or "").strip():
        return None
    init = None
    if neutral is not None:
        init = number(neutral)
        if init is None or (t[0] != "f" and not re.fullmatch(r"[-+]?\d+", init)):
            return None
    b = _SCAN_BUILTIN.get(re.sub(r"\s+", "", scan_expr))
    if b and not exclusive:
        body = f"{b}(x)"
    elif b == "cumsum" and init is not None and float(init) == 0:
        body = "cumsum(x, exclusive=true)"
    else:
        lam = c_to_cuk(scan_expr, (), (), ("a", "b"))
        if lam is None or init is None:
            return None
        body = f"scan(|a, b| {lam}, {t}({init}), x{', exclusive=true' if exclusive else ''})"
    return compile_fn(f"fn k(x: {t}[n]) -> {t}[n] = {body};\n")
