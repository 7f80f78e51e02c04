/* Functions of NumPy, CuPy and Futhark that cuk spells differently, does not need, or
   does not have yet: what to write instead. sema's "unknown function" message gives the
   advice (for names that are not a builtin or a user function), and docs/language.md,
   "What cuk has instead", lists the same rows; tests/python/test_docs.py checks that the
   two agree and that every name here still gets its advice.

   X(name, from, kind, advice): kind USE (advice: what to write), PLANNED (advice: the
   cuk function that will do it; part 2 of the design, not built yet) or NOTE (advice:
   a sentence). Each advice is one string literal (the test reads this file). */
#ifndef CUK_INSTEAD_H
#define CUK_INSTEAD_H

#define INSTEAD(X)                                                                                 \
    X("amax", "NumPy", USE, "max(x) (axis= and keepdims= as in NumPy)")                          \
    X("amin", "NumPy", USE, "min(x) (axis= and keepdims= as in NumPy)")                          \
    X("cumulative_sum", "NumPy", USE, "cumsum(x)")                                               \
    X("cumulative_prod", "NumPy", USE, "cumprod(x)")                                             \
    X("reduceat", "NumPy", USE, "sum(x, segments=offs) (offs i64[k + 1]: 0, the segment starts, len(x))") \
    X("segment_reduce", "PyTorch", USE, "sum(x, segments=offs) (or min, max, prod, mean)")      \
    X("matmul", "NumPy", USE, "a @ b or dot(a, b)")                                              \
    X("inner", "NumPy", USE, "dot(a, b) (two 1-D arrays)")                                       \
    X("vdot", "NumPy", USE, "dot(a, b) (two 1-D arrays)")                                        \
    X("outer", "NumPy", USE, "reshape(a, len(a), 1) * b")                                        \
    X("arange", "NumPy", USE, "iota(n) (0, 1, ..., n-1; iota(n, dtype=f32) for floats) or linspace(a, b, n)") \
    X("clip", "NumPy", USE, "clamp(x, lo, hi)")                                                  \
    X("absolute", "NumPy", USE, "abs(x)")                                                        \
    X("fabs", "NumPy", USE, "abs(x)")                                                            \
    X("angle", "NumPy", USE, "arg(z)")                                                           \
    X("conjugate", "NumPy", USE, "conj(z)")                                                      \
    X("power", "NumPy", USE, "x ** y or pow(x, y)")                                              \
    X("arcsin", "NumPy", USE, "asin(x)")                                                         \
    X("arccos", "NumPy", USE, "acos(x)")                                                         \
    X("arctan", "NumPy", USE, "atan(x)")                                                         \
    X("arctan2", "NumPy", USE, "atan2(y, x)")                                                    \
    X("rint", "NumPy", USE, "round(x) (half to even, like NumPy)")                               \
    X("around", "NumPy", USE, "round(x) (half to even, like NumPy)")                             \
    X("concatenate", "NumPy", USE, "concat(a, b, ...) or concat(a, b, axis=k)")                  \
    X("hstack", "NumPy", USE, "concat(a, b) for 1-D arrays, concat(a, b, axis=1) for 2-D ones")  \
    X("vstack", "NumPy", USE, "concat(a, b) for 2-D arrays, stack(a, b) for 1-D rows") \
    X("flip", "NumPy", USE, "reverse(x) or x[::-1] (dimension 0)")                               \
    X("ravel", "NumPy", USE, "reshape(x, -1)")                                                   \
    X("permute_dims", "NumPy", USE, "transpose(x, axes...)")                                     \
    X("take", "NumPy", USE, "x[idx] (a gather, idx an integer array)")                           \
    X("empty", "NumPy", USE, "zeros(n, ...)")                                                    \
    X("zeros_like", "NumPy", USE, "zeros(n, ...) with x's sizes (a parameter x: f32[n, m] names them)") \
    X("ones_like", "NumPy", USE, "ones(n, ...) with x's sizes (a parameter x: f32[n, m] names them)") \
    X("full_like", "NumPy", USE, "full(v, n, ...) with x's sizes (a parameter x: f32[n, m] names them)") \
    X("average", "NumPy", USE, "mean(x) (no weights)")                                           \
    X("count_nonzero", "NumPy", USE, "sum(i64(m)) for a bool array m")                           \
    X("add", "NumPy", USE, "a + b")                                                              \
    X("subtract", "NumPy", USE, "a - b")                                                         \
    X("multiply", "NumPy", USE, "a * b")                                                         \
    X("divide", "NumPy", USE, "a / b")                                                           \
    X("true_divide", "NumPy", USE, "a / b")                                                      \
    X("negative", "NumPy", USE, "-x")                                                            \
    X("remainder", "NumPy", USE, "a % b (its sign is the dividend's, as in C and fmod)")         \
    X("mod", "NumPy", USE, "a % b (its sign is the dividend's, as in C and fmod)")               \
    X("logical_and", "NumPy", USE, "a && b")                                                     \
    X("logical_or", "NumPy", USE, "a || b")                                                      \
    X("logical_not", "NumPy", USE, "!a")                                                         \
    X("index_add", "PyTorch", USE, "reduce_by_index(dest, add, idx, vals)")                      \
    X("scatter_add", "PyTorch", USE, "reduce_by_index(dest, add, idx, vals)")                    \
    X("scatter_reduce", "PyTorch", USE, "reduce_by_index(dest, f, idx, vals) (f: add, mul, min, max or a lambda)") \
    X("histc", "PyTorch", USE, "histogram(x, nbins, lo, hi)")                                    \
    X("put", "NumPy", USE, "scatter(dest, idx, vals)")                                           \
    X("digitize", "NumPy", USE, "searchsorted(bins, x, right=true) (increasing bins)")           \
    X("flatnonzero", "NumPy", USE, "nonzero(mask) (i64 flat indices)")                       \
    X("extract", "NumPy", USE, "x[mask] or filter(f, x)")                                    \
    X("compress", "NumPy", USE, "x[mask] or filter(f, x)")                                   \
    X("topk", "PyTorch", USE, "let (values, positions) = top_k(x, k);")                          \
    X("hist", "Futhark", USE, "histogram(x, nbins, lo, hi) or reduce_by_index(dest, f, idx, vals)")               \
    X("rotate", "Futhark", USE, "roll(x, shift, axis=k)")                                        \
    X("replicate", "Futhark", USE, "full(v, n) (the value comes first)")                         \
    X("length", "Futhark", USE, "len(x)")                                                        \
    X("flatten", "Futhark/NumPy", USE, "reshape(x, -1)")                                         \
    X("unflatten", "Futhark", USE, "reshape(x, n, m)")                                           \
    X("zip", "Futhark", NOTE, "map(f, xs, ys) takes several arrays, so no zip is needed")                 \
    X("map2", "Futhark", USE, "map(f, xs, ys)")                                                  \
    X("map3", "Futhark", USE, "map(f, xs, ys, zs)")                                              \
    X("foldl", "Futhark", USE, "reduce(f, init, x) (f associative) or a for loop")               \
    X("tabulate", "Futhark", USE, "map(f, iota(n))")                                             \
    X("copy", "NumPy/Futhark", NOTE, "cuk never changes an array a name is bound to, so the array itself will do") \
    X("fuse", "CuPy", NOTE, "cuk fuses every program into kernels by itself (docs/fusion.md)") \
    X("ElementwiseKernel", "CuPy", NOTE, "write the elementwise expression, or map(f, xs...): it compiles to one fused kernel") \
    X("ReductionKernel", "CuPy", NOTE, "write sum(...) of an expression, or reduce(f, init, x): it compiles to one fused kernel")

typedef enum { INSTEAD_USE, INSTEAD_PLANNED, INSTEAD_NOTE } InsteadKind;

#endif
