"""The IPython/Jupyter extension: ``%load_ext cuk`` registers the ``%%cuk`` cell magic,
which compiles the cell as a cuk program and binds its functions in the notebook by name.

Nothing here imports IPython: the shell is the object IPython hands to
``load_ipython_extension``, and only its ``register_magic_function`` and ``push`` are
used, so the tests can drive the extension with a stand-in shell."""
import argparse
import shlex

import cuk


class _UsageError(Exception):
    """A bad option on the ``%%cuk`` line, shown as its message alone."""

    def _render_traceback_(self):
        return ["UsageError: %%cuk: " + str(self)]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would exit the kernel's process
        raise _UsageError(message)


_PARSER = _Parser(prog="%%cuk", add_help=False)
_PARSER.add_argument("--device", choices=("auto", "gpu", "cpu"), default=None)
_PARSER.add_argument("--name", default="<cell>")
_PARSER.add_argument("--fast-math", action="store_true")


def _shown_alone(e):
    """Gives a cuk error raised in the magic the hook IPython displays exceptions by
    (``_render_traceback_``): a compile error shows as the compiler's located message
    (file:line:col, the source line and a caret) without a Python traceback through the
    magic, other cuk errors as their type and message. The exception stays what it was
    for code that catches it."""
    text = str(e) if isinstance(e, cuk.CompileError) else "cuk.%s: %s" % (type(e).__name__, e)
    e._render_traceback_ = lambda: [text]
    return e


def _make_magic(shell):
    def cuk_cell(line, cell):
        """%%cuk [--device auto|gpu|cpu] [--name NAME] [--fast-math]

        Compiles the cell as a cuk program (cuk.compile) and binds each of its functions
        in the notebook under its own name, so the next cells call ``saxpy(2.0, x, y)``.
        The cell's value is the cuk.Module (its backend and functions).

        --device     auto (the GPU if one is usable, else the CPU backend), gpu or cpu;
                     by default $CUK_BACKEND, else auto, as cuk.compile
        --name NAME  the file name compile errors show (default <cell>)
        --fast-math  lets the GPU contract a * b + c into one FMA
        """
        opts = _PARSER.parse_args(shlex.split(line))
        # always source text: a one-line cell such as "prog.cuk" is not a path
        src = cell if cell.endswith("\n") else cell + "\n"
        try:
            m = cuk.compile(src, device=opts.device, name=opts.name, fast_math=opts.fast_math)
        except cuk.Error as e:
            raise _shown_alone(e) from None
        shell.push({name: getattr(m, name) for name in m.functions})
        return m

    return cuk_cell


def load_ipython_extension(ipython):
    """Registers ``%%cuk`` (``%load_ext cuk``)."""
    ipython.register_magic_function(_make_magic(ipython), magic_kind="cell", magic_name="cuk")
