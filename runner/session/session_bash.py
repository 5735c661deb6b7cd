# boxer's bash cells (docs/e2b.md, "Code interpreter"): a bash context of
# the code interpreter is a long-lived bash of its own, as Jupyter's bash
# kernel is one, so that variables, functions, aliases and the working
# directory outlive a cell. session_cell.py loads this file from /code on
# the first bash cell.
#
# The bash is interactive (as the kernel's, under its pty, is), so that an
# interrupt ends the whole cell as Ctrl-C ends a command line, and the
# shell goes on. It reads its commands from a pipe of the driver's (its
# fd 0); each cell is one line on it that runs the cell's code, read from
# a file, with its streams on two FIFOs of its own, its stdin /dev/null
# and the control fd closed, and then reports "TOKEN STATUS" on the
# control fd (CTL), a pipe the driver alone reads. The cell's output
# never passes through that pipe, so nothing it prints, the sentinel's
# text included, can end it early; a token that is not the cell's (a late
# answer) is skipped.
import os
import secrets
import select
import shlex
import shutil
import signal
import stat
import tempfile
import time

# CTL is bash's fd for the control channel's answers: above the few a
# script uses (3 to 9) and bash's own (10 up).
CTL = 63
# INTERRUPT_WAIT bounds the wait for the cell's end after an interrupt;
# then its bash is killed (the host gives the driver 3 s in all).
INTERRUPT_WAIT = 1.5
# DRAIN bounds the wait for a cell's output once bash answered: a process
# the cell left running may hold its streams.
DRAIN = 0.5

# SETUP runs once in each new bash. __boxer_set exports a cell's variables
# (NUL-separated NAME=VALUE in a file) and notes what they were;
# __boxer_done puts them back and answers for the cell.
SETUP = r"""set +H +o history
unset HISTFILE PROMPT_COMMAND MAILCHECK
PS1= PS2=
__boxer_undo=()
__boxer_set() {
	local __boxer_kv __boxer_k
	while IFS= read -r -d '' __boxer_kv; do
		__boxer_k=${__boxer_kv%%=*}
		if ! [[ $__boxer_k =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
			printf 'boxer: env var %q is not a name bash can hold: left out\n' "$__boxer_k" >&2
			continue
		fi
		if [[ -v $__boxer_k ]]; then
			__boxer_undo+=("$__boxer_k=${!__boxer_k}")
		else
			__boxer_undo+=("$__boxer_k")
		fi
		export "$__boxer_kv"
	done <"$1"
}
__boxer_done() {
	local __boxer_kv
	for __boxer_kv in "${__boxer_undo[@]}"; do
		case $__boxer_kv in
		*=*) export "$__boxer_kv" ;;
		*) unset "$__boxer_kv" ;;
		esac
	done
	__boxer_undo=()
	unset __boxer_code
	printf '%s %s\n' "$1" "$2" >&63
}
readonly -f __boxer_set __boxer_done
"""


class BashGone(Exception):
    """The context's bash ended (or never started): the next cell starts
    another. aborted tells one killed at an interrupt."""

    def __init__(self, why, aborted=False):
        super().__init__(why)
        self.aborted = aborted


class BashContext:
    """A bash context: its shell, made at its first cell, and its count."""

    language = program = "bash"

    def __init__(self, cwd):
        self.cwd, self.count = cwd, 0
        self.pid = self.dir = self.cmd = self.ctl = None

    def start(self, global_env):
        prog = shutil.which(self.program)
        if prog is None:
            raise BashGone("%s is not installed in this sandbox" % self.program)
        if not os.path.isdir(self.cwd):
            raise BashGone("no directory %s in the sandbox" % self.cwd)
        self.dir = tempfile.mkdtemp(prefix=".boxer-%s-" % self.program)
        cmd_r, self.cmd = os.pipe()
        self.ctl, ctl_w = os.pipe()
        env = dict(os.environ)
        env.update(global_env)
        self.answers = b""
        try:
            # posix_spawn, not fork: the driver has threads. The shell gets
            # a session (and process group) of its own, which an interrupt
            # signals; the signals the driver blocks or ignores are back to
            # their defaults (a pipe's reader that goes must end its
            # writer); its own streams are /dev/null, each cell's its own.
            self.pid = os.posix_spawn(prog, self.argv(), env, file_actions=[
                (os.POSIX_SPAWN_DUP2, cmd_r, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, ctl_w, CTL),
            ], setsid=True, setsigmask=set(), setsigdef={signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGQUIT})
        except OSError as e:
            raise BashGone("starting %s: %s" % (self.program, e.strerror))
        finally:
            os.close(cmd_r)
            os.close(ctl_w)
        self.setup()

    def argv(self):
        return ["bash", "--norc", "--noprofile", "--noediting", "-i"]

    def setup(self):
        self.send(SETUP + "cd -- %s\n" % shlex.quote(self.cwd))

    def send(self, text):
        data = memoryview(text.encode())
        try:
            while data:
                data = data[os.write(self.cmd, data):]
        except OSError as e:
            raise BashGone("%s is gone (%s)" % (self.program, e.strerror))

    def answer(self, token, timeout=None):
        """Waits for the cell's answer: its status, or None at timeout.
        Raises BashGone if bash ended."""
        while True:
            line, sep, rest = self.answers.partition(b"\n")
            if sep:
                self.answers = rest
                parts = line.split()
                if len(parts) == 2 and parts[0] == token.encode() and parts[1].isdigit():
                    return int(parts[1]) & 0xFF
                continue
            if len(self.answers) > 4096:
                self.answers = b""
            ready, _, _ = select.select([self.ctl], [], [], timeout)
            if not ready:
                return None
            data = os.read(self.ctl, 4096)
            if not data:
                raise BashGone("%s exited" % self.program)
            self.answers += data

    def stop(self):
        """Ends the shell and whatever of its process group is left;
        returns the shell's exit status (128 + a signal's number)."""
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        for fd in (self.cmd, self.ctl):
            if fd is not None:
                os.close(fd)
        self.cmd = self.ctl = None
        if self.pid is None:
            return 1
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        status = 1
        try:
            _, how = os.waitpid(self.pid, 0)
            status = os.waitstatus_to_exitcode(how)
            if status < 0:
                status = 128 - status
        except ChildProcessError:
            pass
        self.pid = None
        return status & 0xFF

    def run(self, spec, call, emit, interruptible, stream):
        """Runs the cell's code; its error, if any, goes to emit. Returns the
        cell's exit status."""
        code = spec.get("code", "")
        if "\0" in code:
            emit(error("", "a %s cell's code holds no NUL byte" % self.language), False)
            return 1
        if self.pid is None:
            try:
                self.start(spec.get("global_env") or {})
            except BashGone as e:
                self.stop()
                emit(error("", str(e)), False)
                return 1
        try:
            return self.execute(code, spec, call, emit, interruptible, stream)
        except BashGone as e:
            status = self.stop()
            if e.aborted:
                status = 130
                emit(error("ExecutionAborted", "Execution was aborted"), False)
            elif status:
                emit(error("", str(status)), False)
            # As the kernel's "Restarting Bash": the state is gone.
            os.write(2, b"boxer: %s: the context's next cell starts a new %s\n" % (str(e).encode(), self.program.encode()))
            return status or 0

    def execute(self, code, spec, call, emit, interruptible, stream):
        env = spec.get("env") or {}
        # The shell's files live while it does; a cell that removed them
        # gets them anew.
        os.makedirs(self.dir, 0o700, exist_ok=True)
        base = os.path.join(self.dir, "%d-" % call)
        files = {k: base + k for k in ("code", "env", "out", "err", "records")}
        held, pumps = [], []
        interrupted, status = False, None
        try:
            write_file(files["code"], code.encode("utf-8", "surrogatepass"))
            for kind in ("out", "err"):
                os.mkfifo(files[kind], 0o600)
                # The FIFO's reader, then a writer of the driver's own, so
                # that its end comes only once the cell's writers are gone.
                r = os.open(files[kind], os.O_RDONLY | os.O_NONBLOCK)
                held.append(os.open(files[kind], os.O_WRONLY))
                os.set_blocking(r, True)
                pumps.append(stream(r, kind.encode()))
            token = "%d-%s" % (call, secrets.token_hex(8))
            line = self.command(files, token, env, spec)
            try:
                with interruptible():
                    self.send(line)
                    status = self.answer(token)
            except KeyboardInterrupt:
                interrupted = True
            if interrupted:
                status = self.interrupt(token)
        finally:
            for fd in held:
                os.close(fd)
            end = time.monotonic() + DRAIN
            for p in pumps:
                p.join(max(0, end - time.monotonic()))
            if not interrupted and status is not None:
                self.report(files, status, emit)
            for path in files.values():
                try:
                    os.unlink(path)
                except OSError:
                    pass
        if interrupted or status == 130 and self.language != "bash":
            emit(error("ExecutionAborted", "Execution was aborted"), False)
            return 130
        return status

    def command(self, files, token, env, spec):
        """The line that runs the cell's code with its variables in env."""
        line = ""
        if env:
            write_file(files["env"], b"".join(b"%s=%s\0" % (k.encode("utf-8", "surrogatepass"), v.encode("utf-8", "surrogatepass")) for k, v in env.items()))
            line = "__boxer_set %s; " % shlex.quote(files["env"])
        return "{ %sIFS= read -r -d '' __boxer_code <%s; eval \"$__boxer_code\"; } </dev/null >%s 2>%s %d>&-; __boxer_done %s $?\n" % (
            line, shlex.quote(files["code"]), shlex.quote(files["out"]), shlex.quote(files["err"]), CTL, token)

    def report(self, files, status, emit):
        """Sends the cell's records, once it answered with status."""
        if status:
            emit(error("", str(status)), False)

    def after_interrupt(self, token):
        """Makes sure the cell answers, should the interrupt have ended the
        line that would have."""
        self.send("__boxer_done %s $?\n" % token)

    def interrupt(self, token):
        """Ctrl-C: SIGINT to the shell's process group, which ends the
        cell's command line; then a line that answers for the cell, should
        the interrupt have ended the first before it answered. A cell that
        does not end in INTERRUPT_WAIT ends with its shell."""
        try:
            os.killpg(self.pid, signal.SIGINT)
        except OSError:
            pass
        self.after_interrupt(token)
        status = self.answer(token, INTERRUPT_WAIT)
        if status is None:
            # Killed now, before the wait for its output.
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            raise BashGone("%s did not stop at the interrupt and was killed" % self.program, aborted=True)
        return status


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def error(name, value):
    return {"kind": "error", "name": name, "value": value, "traceback": ""}
