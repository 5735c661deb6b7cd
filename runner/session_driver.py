# boxer's session driver (docs/reference.md, "Sessions"): one long-lived
# interpreter that runs each call's code in the same namespace, like a
# notebook kernel. boxer delivers it read-only at /code; each call is a
# client process (session_call.py) that hands over its stdin, stdout and
# stderr through a Unix socket and exits with the call's status.
import io
import os
import signal
import socket
import sys
import traceback

SIGINT = {signal.SIGINT}


def status_of(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run(name, ns):
    """Runs /code/NAME in ns; returns its exit status."""
    with open(os.path.join("/code", name), encoding="utf-8") as f:
        source = f.read()
    # SIGINT (boxer's interrupt at the call's timeout) is let through only
    # while the call's code runs; one that came late is dropped first.
    while signal.SIGINT in signal.sigpending():
        signal.sigwait(SIGINT)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGINT)
    try:
        exec(compile(source, "<call %s>" % name.split("-")[1].split(".")[0], "exec"), ns)
        return 0
    except SystemExit as e:
        return status_of(e)
    except BaseException as e:
        # The traceback starts at the call's code, not here.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGINT)


def serve(conn, ns):
    msg, fds, _, _ = socket.recv_fds(conn, 256, 3)
    name = msg.decode("ascii", "replace")
    if len(fds) != 3 or not name.startswith("call-") or "/" in name:
        for fd in fds:
            os.close(fd)
        return
    saved = [os.dup(i) for i in range(3)]
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    try:
        status = run(name, ns)
    except BaseException:
        traceback.print_exc()
        status = 1
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    for i, fd in enumerate(saved):
        os.dup2(fd, i)
        os.close(fd)
    conn.sendall(b"%d\n" % status)


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    path = sys.argv[1]
    # boxer interrupts a call from inside the sandbox, by this PID: a
    # signal from the host reaches an exec'd process under runc only.
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    sys.argv = [""]
    sys.path[0] = "/workspace"
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        conn, _ = srv.accept()
        try:
            serve(conn, ns)
        except BaseException:
            pass
        finally:
            conn.close()


main()
