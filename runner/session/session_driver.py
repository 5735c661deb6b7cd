# boxer's session driver (docs/reference.md, "Sessions"): one long-lived
# interpreter that runs each call's code in the same namespace, like a
# notebook kernel. boxer delivers it read-only at /code and starts it with
# two FIFOs of the session's run directory as its streams: frames come in
# on fd 0 and go out on fd 1 (runner/session_wire_linux.go has the
# format); fd 2 is fd 0's own FIFO, which the driver holds open and never
# writes, so that the FIFO keeps a writer and fd 0 never reads an end
# between two callers. A "cell" frame runs a code interpreter's cell
# (session_cell.py, delivered beside this file, and session_bash.py for
# a bash context's, which runs in a bash of its own): its results and error
# come back as "rec" frames, JSON lines, before its exit frame. A "load"
# frame, which boxer sends a ready session before any call
# (runner/session_ready_linux.go), names modules to import ahead of the
# calls: the driver imports them into sys.modules only (no name is bound
# in the calls' namespace) and answers "ready".
import contextlib
import importlib.util
import io
import json
import os
import queue
import signal
import sys
import threading
import traceback

SIGINT = {signal.SIGINT}
# A frame in is at most PIPE_BUF bytes (so that each is written whole);
# a frame out carries at most CHUNK bytes of output.
MAX_IN = 4096
CHUNK = 65536
# DRAIN bounds the wait for a call's output once its code has returned:
# a process it left running may hold its streams.
DRAIN = 0.5


def status_of(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


class Wire:
    def __init__(self):
        self.inp = io.open(os.dup(0), "rb", buffering=CHUNK)
        self.out = os.dup(1)
        self.keep = os.dup(2)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        self.lock = threading.Lock()

    def send(self, kind, call, data=b""):
        frame = memoryview(b"%s %d %d\n" % (kind, call, len(data)) + data)
        with self.lock:
            while frame:
                frame = frame[os.write(self.out, frame):]

    def frames(self):
        """Yields (kind, call, data) until fd 0 ends; skips what is not a frame."""
        while True:
            line = self.inp.readline(64)
            if not line:
                return
            parts = line.split()
            if len(parts) != 3 or not line.endswith(b"\n"):
                continue
            try:
                call, n = int(parts[1]), int(parts[2])
            except ValueError:
                continue
            if not 0 <= n <= MAX_IN:
                continue
            data = self.inp.read(n)
            if len(data) != n:
                return
            yield parts[0], call, data


def reader(wire, calls):
    """Hands each call to the main thread, with a pipe for its stdin that
    this thread fills from the call's "in" frames."""
    stdins = {}
    for kind, call, data in wire.frames():
        if kind in (b"run", b"cell"):
            # A caller that died mid-call sent no "eof": its calls' input
            # ends with the next call.
            for old in [c for c in stdins if c < call]:
                os.close(stdins.pop(old))
            r, w = os.pipe()
            stdins[call] = w
            calls.put((call, data.decode("ascii", "replace"), r, kind))
        elif kind == b"load":
            calls.put((call, data.decode("ascii", "replace"), None, kind))
        elif kind in (b"in", b"eof") and call in stdins:
            w = stdins[call]
            try:
                if kind == b"eof":
                    raise EOFError
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view):]
            except (OSError, EOFError):
                # The input ended, or the call did (it no longer reads).
                os.close(w)
                del stdins[call]
    os._exit(0)


def pump(wire, fd, kind, call):
    try:
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                break
            wire.send(kind, call, data)
    finally:
        os.close(fd)


def start_pump(wire, fd, kind, call):
    """Sends what fd reads as call's output of kind until its end; returns
    the thread that does."""
    p = threading.Thread(target=pump, args=(wire, fd, kind, call), daemon=True)
    p.start()
    return p


@contextlib.contextmanager
def interruptible():
    """Lets SIGINT (boxer's interrupt at the call's timeout) through only
    while the call's code runs; one that came late is dropped first."""
    while signal.SIGINT in signal.sigpending():
        signal.sigwait(SIGINT)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGINT)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGINT)


def run(name, ns):
    """Runs /code/NAME in ns; returns its exit status."""
    with open(os.path.join("/code", name), encoding="utf-8") as f:
        source = f.read()
    try:
        with interruptible():
            exec(compile(source, "<call %s>" % number(name), "exec"), ns)
        return 0
    except SystemExit as e:
        return status_of(e)
    except BaseException as e:
        # The traceback starts at the call's code, not here.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return 130 if isinstance(e, KeyboardInterrupt) else 1


def number(name):
    return name.split("-")[1].split(".")[0]


CELLS = []


def cells(ns):
    """The code interpreter's cells, loaded on the first one."""
    if not CELLS:
        spec = importlib.util.spec_from_file_location("boxer_cell", "/code/.boxer-cell.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        CELLS.append(module.Cells(ns))
    return CELLS[0]


def send_record(wire, call, rec):
    data = json.dumps(rec).encode() + b"\n"
    for i in range(0, len(data), CHUNK):
        wire.send(b"rec", call, data[i:i + CHUNK])


def preload(names):
    """Imports names (comma-separated) before any call; one that fails is
    left out, as a fresh interpreter would not have it either."""
    for name in names.split(","):
        if name:
            try:
                importlib.import_module(name)
            except BaseException:
                pass


def serve(wire, call, name, stdin, ns, cell):
    """Runs one call with its own streams, then sends its exit frame; a
    cell's records go after its output."""
    if not name.startswith("call-") or "/" in name:
        os.close(stdin)
        wire.send(b"exit", call, b"1")
        return
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pumps = [start_pump(wire, out_r, b"out", call), start_pump(wire, err_r, b"err", call)]
    for fd, target in ((stdin, 0), (out_w, 1), (err_w, 2)):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    later = []

    def emit(rec, now):
        if now:
            send_record(wire, call, rec)
        else:
            later.append(rec)

    try:
        if cell:
            status = cells(ns).run(name, int(number(name)), emit, interruptible,
                                   lambda fd, kind: start_pump(wire, fd, kind, call))
        else:
            status = run(name, ns)
    except BaseException:
        traceback.print_exc()
        status = 1
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for p in pumps:
        p.join(DRAIN)
    for rec in later:
        send_record(wire, call, rec)
    wire.send(b"exit", call, b"%d" % status)


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # boxer interrupts a call from inside the sandbox, by this PID: a
    # signal from the host reaches an exec'd process under runc only.
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    wire = Wire()
    calls = queue.SimpleQueue()
    threading.Thread(target=reader, args=(wire, calls), daemon=True).start()
    sys.argv = [""]
    sys.path[0] = "/workspace"
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    served = False
    while True:
        call, name, stdin, kind = calls.get()
        try:
            if kind == b"load":
                # Only before the first call: a call's modules are its own.
                if not served:
                    preload(name)
                wire.send(b"ready", call)
                continue
            served = True
            serve(wire, call, name, stdin, ns, kind == b"cell")
        except BaseException:
            # The wire broke (boxer reads no more): the next caller ends
            # the session when it finds the interpreter gone.
            os._exit(1)


main()
