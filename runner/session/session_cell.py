# boxer's code-interpreter cells (docs/e2b.md, "Code interpreter"): what
# the session driver runs for a "cell" frame, as a notebook kernel would.
# A cell runs in a context (a namespace and a working directory of its
# own; "" is the session's own namespace, which plain calls share), and
# reports typed records beside its output: the execution count, the value
# of its last expression and the matplotlib figures it left open, each in
# several formats, and its exception. A context of language "bash" is a
# shell of its own instead (session_bash.py, delivered beside this file),
# one of "javascript" or "typescript" a node of its own (session_node.py).
# The driver loads this file from /code on the first cell only;
# runner/session_cell_linux.go reads the records.
import ast
import asyncio
import base64
import importlib.abc
import importlib.util
import inspect
import io
import json
import linecache
import os
import shutil
import sys
import traceback

# Formats read from an object's _repr_*_ methods, as IPython's display does;
# binary ones come back as base64.
FORMATS = [
    ("text/html", "_repr_html_", False),
    ("text/markdown", "_repr_markdown_", False),
    ("image/svg+xml", "_repr_svg_", False),
    ("image/png", "_repr_png_", True),
    ("image/jpeg", "_repr_jpeg_", True),
    ("application/pdf", "_repr_pdf_", True),
    ("text/latex", "_repr_latex_", False),
    ("application/json", "_repr_json_", False),
    ("application/javascript", "_repr_javascript_", False),
]

HERE = os.path.abspath(__file__)


class Context:
    language = "python"

    def __init__(self, ns, cwd):
        self.ns, self.cwd, self.count = ns, cwd, 0


# The languages of contexts that run in a process of their own, and the
# file of each's module.
SHELLS = {"bash": "boxer_bash", "javascript": "boxer_node", "typescript": "boxer_node"}
# MODULES are this file's companions in /code, each loaded when first
# needed: session_bash.py, session_node.py (which needs the first) and
# session_chart.py.
MODULES = {"boxer_bash": "/code/.boxer-bash.py", "boxer_node": "/code/.boxer-node.py", "boxer_chart": "/code/.boxer-chart.py"}


def shell_module(name):
    if name not in sys.modules:
        if name == "boxer_node":
            shell_module("boxer_bash")
        spec = importlib.util.spec_from_file_location(name, MODULES[name])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def new_shell(language, cwd):
    if language == "bash":
        return shell_module("boxer_bash").BashContext(cwd)
    return shell_module("boxer_node").NodeContext(cwd, language)


def typescript():
    """Whether node finds the typescript module (Debian's node-typescript)."""
    return any(os.path.isfile(os.path.join(d, "typescript", "package.json"))
               for d in ("/usr/share/nodejs", "/usr/lib/nodejs", "/usr/local/lib/node_modules"))


class Cells:
    """The contexts of one interpreter, and the cell running now."""

    def __init__(self, session_ns):
        self.session_ns = session_ns
        self.contexts = {}
        self.pending = None  # the records of the cell running now
        self.loop = None
        sys.meta_path.insert(0, ModuleHook(self))
        for name, patch in self.patches().items():
            if name in sys.modules:
                patch(sys.modules[name])

    def patches(self):
        """The modules a cell may import that show results, by name."""
        return {"matplotlib.pyplot": self.patch_pyplot, "PIL.Image": self.patch_pil}

    def fresh(self, ns):
        ns.clear()
        ns.update(__name__="__main__", __builtins__=__builtins__, display=self.display)
        return ns

    def context(self, spec):
        cid = spec.get("context", "")
        ctx = self.contexts.get(cid)
        if ctx is None:
            cwd = spec.get("cwd") or os.getcwd()
            if spec.get("language") in SHELLS and cid != "":
                ctx = self.contexts[cid] = new_shell(spec["language"], cwd)
                return ctx
            ns = self.session_ns if cid == "" else self.fresh({})
            ns.setdefault("display", self.display)
            ctx = self.contexts[cid] = Context(ns, cwd)
        return ctx

    def drop(self, cid):
        ctx = self.contexts.pop(cid, None)
        if ctx is not None and ctx.language in SHELLS:
            ctx.stop()
        return ctx

    def run(self, name, call, emit, interruptible, stream=None):
        """Runs the cell /code/NAME; emit(record, now) sends a record at once
        or after the cell's output; stream(fd, kind) sends what fd reads as
        the call's output of kind (b"out", b"err") and returns the thread
        that does. Returns the call's exit status."""
        with open(os.path.join("/code", name), encoding="utf-8") as f:
            spec = json.load(f)
        op = spec.get("op")
        cid = spec.get("context", "")
        language = spec.get("language") or "python"
        if language != "python" and (language not in SHELLS or cid == "" or stream is None):
            emit(error("ValueError", "no %s context %r in this interpreter" % (language, cid)), False)
            return 1
        if op == "create":
            cwd = spec.get("cwd", "")
            if not os.path.isdir(cwd):
                emit(error("FileNotFoundError", "no directory %s in the sandbox" % cwd), False)
                return 1
            program = "bash" if language == "bash" else "node"
            if language in SHELLS and not shutil.which(program):
                emit(error("FileNotFoundError", "%s is not installed in this sandbox: its template has no %s" % (program, program)), False)
                return 1
            if language == "typescript" and not typescript():
                emit(error("FileNotFoundError", "the typescript module is not installed in this sandbox: its template has no node-typescript"), False)
                return 1
            self.drop(cid)
            self.context(spec)
            return 0
        if op == "reset":
            old = self.drop(cid)
            if cid == "":
                self.fresh(self.session_ns)
            if old is not None:
                self.context(dict(spec, cwd=spec.get("cwd") or old.cwd, language=old.language))
            return 0
        if op == "drop":
            self.drop(cid)
            return 0
        if op != "exec":
            emit(error("ValueError", "unknown cell operation %r" % op), False)
            return 1
        ctx = self.context(spec)
        if ctx.language != language:
            emit(error("ValueError", "context %r is a %s context, not %s" % (cid, ctx.language, language)), False)
            return 1
        ctx.count += 1
        emit({"kind": "count", "count": ctx.count}, True)
        if language in SHELLS:
            return ctx.run(spec, call, emit, interruptible, stream)
        for k, v in (spec.get("global_env") or {}).items():
            os.environ[k] = v
        saved = {k: os.environ.get(k) for k in spec.get("env") or {}}
        os.environ.update(spec.get("env") or {})
        here = os.getcwd()
        # Output by the line, as a notebook's streams come, rather than by
        # the write (print's every argument).
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True)
        self.pending = []
        status = 0
        try:
            try:
                with interruptible():
                    os.chdir(ctx.cwd)
                    self.execute(spec.get("code", ""), "<cell %d>" % call, ctx)
            except BaseException as e:
                status = 130 if isinstance(e, KeyboardInterrupt) else 1
                self.pending.append(error_record(e))
            try:
                ctx.cwd = os.getcwd()
            except OSError:
                pass
        finally:
            os.chdir(here)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            records, self.pending = self.pending, None
            for rec in records:
                emit(rec, False)
        return status

    def execute(self, source, filename, ctx):
        # The cell's lines in its tracebacks, as a file's would be.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        tree = ast.parse(source, filename)
        last = None
        # A last expression's value is the cell's result, unless a ';'
        # silences it (as in a notebook).
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        try:
            self.evaluate(compile(tree, filename, "exec", flags=flags), ctx.ns)
            if last is not None:
                value = self.evaluate(compile(last, filename, "eval", flags=flags), ctx.ns)
                if value is not None:
                    ctx.ns["_"] = value
                    self.pending.append(result_record(value, True))
                    if is_figure(value):
                        close_figure(value)
        finally:
            self.flush_figures()

    def evaluate(self, code, ns):
        value = eval(code, ns)
        if code.co_flags & inspect.CO_COROUTINE:
            # A cell with a top-level await: one event loop for the
            # interpreter's life, as a notebook kernel has.
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
            value = self.loop.run_until_complete(value)
        return value

    def display(self, *objs):
        """Shows objects as results of the cell (IPython's display)."""
        for obj in objs:
            rec = result_record(obj, False)
            if self.pending is None:
                print(rec["data"].get("text/plain", ""))
            else:
                self.pending.append(rec)

    def flush_figures(self):
        """Shows the figures left open as results, then closes them (as
        IPython's inline backend does after each cell)."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None or self.pending is None:
            return
        for num in plt.get_fignums():
            self.pending.append(result_record(plt.figure(num), False))
        plt.close("all")

    def patch_pyplot(self, plt):
        show = plt.show

        def cell_show(*args, **kwargs):
            if self.pending is None:
                return show(*args, **kwargs)
            self.flush_figures()

        plt.show = cell_show

    def patch_pil(self, image):
        """A PIL image's show() and save() in a cell's own code show it as
        a result (png), as E2B's template does; elsewhere they do as ever."""
        cls = image.Image
        show, save = cls.show, cls.save
        cells = self

        def cell_show(img, *args, **kwargs):
            if cells.pending is None:
                return show(img, *args, **kwargs)
            cells.display(img)

        def cell_save(img, *args, **kwargs):
            done = save(img, *args, **kwargs)
            # The cell's own save only: a library's (matplotlib's savefig
            # writes its PNG through PIL) is no result.
            if cells.pending is not None and sys._getframe(1).f_globals.get("__name__") == "__main__":
                cells.display(img)
            return done

        cls.show, cls.save = cell_show, cell_save


class ModuleHook(importlib.abc.MetaPathFinder):
    """Patches the modules that show results (Cells.patches) once a cell
    imports them: plt.show() shows the figures, a PIL image's show() and
    save() the image."""

    def __init__(self, cells):
        self.cells = cells

    def find_spec(self, name, path, target=None):
        patch = self.cells.patches().get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module

        def patched(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = patched
        return spec


def is_figure(obj):
    return type(obj).__module__.startswith("matplotlib.") and type(obj).__name__ == "Figure" and hasattr(obj, "savefig")


def close_figure(fig):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)


def result_record(obj, main):
    data = {"text/plain": repr(obj)}
    if is_figure(obj):
        buf = io.BytesIO()
        # The figure's own size and dpi: figsize x dpi pixels.
        obj.savefig(buf, format="png")
        data["image/png"] = base64.b64encode(buf.getvalue()).decode("ascii")
        try:
            chart = shell_module("boxer_chart").figure_chart(obj)
            if chart is not None:
                json.dumps(chart, allow_nan=False)
                data["e2b/chart"] = chart
        except Exception as e:
            print("boxer: the figure's chart: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return {"kind": "result", "main": main, "data": data}
    if inspect.isclass(obj):
        return {"kind": "result", "main": main, "data": data}
    for mime, method, binary in FORMATS:
        if getattr(type(obj), method, None) is None:
            continue
        try:
            value = getattr(obj, method)()
        except Exception as e:
            print("boxer: %s of %s failed: %s" % (method, type(obj).__name__, e), file=sys.stderr)
            continue
        if isinstance(value, tuple):
            value = value[0]  # (data, metadata)
        if value is None:
            continue
        if binary and isinstance(value, (bytes, bytearray)):
            value = base64.b64encode(value).decode("ascii")
        elif mime == "application/json" and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        data[mime] = value
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):
        data["e2b/data"] = frame_data(obj, pandas)
    for mime in ("application/json", "e2b/data"):
        try:
            json.dumps(data.get(mime), allow_nan=mime == "application/json")
        except (TypeError, ValueError):
            data.pop(mime, None)
    return {"kind": "result", "main": main, "data": data}


def frame_data(df, pandas):
    """A DataFrame's columns as E2B's "data" holds them: each column's
    values by its name (to_dict(orient="list")), timestamps in ISO 8601,
    a missing value null."""
    out = {}
    for key, values in df.to_dict(orient="list").items():
        column = []
        for v in values:
            if isinstance(v, pandas.Timestamp):
                v = v.isoformat()
            elif hasattr(v, "item") and not isinstance(v, (str, bytes)):
                v = v.item()
            if isinstance(v, float) and v != v:
                v = None
            column.append(v)
        out[key if isinstance(key, str) else str(key)] = column
    return out


def error(name, value):
    return {"kind": "error", "name": name, "value": value, "traceback": ""}


def error_record(e):
    # The traceback starts at the cell's code, not here.
    t = e.__traceback__
    while t is not None and os.path.abspath(t.tb_frame.f_code.co_filename) == HERE:
        t = t.tb_next
    if isinstance(e, SyntaxError) and (t is None or t.tb_frame.f_code.co_filename == ast.__file__):
        # The cell did not compile: no frame of its own to show.
        tb = "".join(traceback.format_exception_only(type(e), e))
    else:
        tb = "".join(traceback.format_exception(type(e), e, t))
    value = str(e)
    if isinstance(e, SystemExit):
        value = "" if e.code is None else str(e.code)
    return {"kind": "error", "name": type(e).__name__, "value": value, "traceback": tb}
