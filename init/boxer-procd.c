/*
 * boxer-procd is a session's process server (docs/internals.md, "The
 * process server"): it starts the session's processes as its own
 * children, relays their stdin, stdout and stderr (or a terminal), sends
 * them signals and reports how they ended, all driven by frames that the
 * session's keeper writes to its stdin and reads from its stdout.
 *
 *   boxer-procd [-q]    (-q: stderr held open, unwritten; below)
 *
 * A frame is a 12-byte header and a payload: the payload's length
 * (32-bit little-endian), the kind, a stream (0 stdin, 1 stdout, 2
 * stderr; 0 when the kind has none), two zero bytes, and the process's
 * id (32-bit little-endian; 0 for the channel's own frames). The keeper
 * allocates every id; boxer-procd never makes one up. The keeper's frames
 * are at most PIPE_BUF bytes, each written with one write, so a keeper
 * that dies never leaves half a frame here; boxer-procd's are at most
 * 32 KiB of payload. A keeper's frame that cannot be parsed ends
 * boxer-procd (and with it the processes it started): the stream has no
 * frame boundary left to trust.
 *
 * Output is read from a process only while the keeper has granted credit
 * for it (a window set by hello, then credit frames as the keeper
 * consumes): a slow keeper stops the process, which blocks in write, and
 * nothing grows here. Stdin is taken up to a window per process that
 * boxer-procd grants and returns as the process reads.
 *
 * A keeper that takes over from a dead one sends hello with a fresh
 * nonce: boxer-procd resets every output credit to the new window, drops
 * a start that was half sent, and answers with the nonce and every
 * process it holds (running, or ended and not yet released), which the
 * keeper finds in the stream by the nonce.
 *
 * When its stdin ends, or SIGTERM, SIGINT or SIGHUP comes, it kills the
 * process groups it started and exits (128+N for a signal N): without
 * a keeper nothing could read them or stop them.
 *
 * It runs as the sandbox's user without capabilities, under the sandbox's
 * seccomp filter: it needs ppoll, read, write, pipe2, open and stat (the
 * PTY, the program), ioctl, vfork, setsid, setpgid, dup2, chdir, execve,
 * wait4, kill, fcntl, close, close_range, prctl, rt_sigaction,
 * rt_sigprocmask, and brk, mmap and munmap (malloc): procwire's
 * TestSeccompAllows traces its calls against the default profile.
 *
 * This file is the channel; init/boxer-procd-start.c starts a process.
 * Built static against musl ('make deps', 'make build'), as boxer-init.
 */
#include "boxer-procd.h"
#include <sys/prctl.h>
#include <sys/syscall.h>

struct proc procs[MAX_PROCS];
uint32_t window; /* output credit each stream starts with (hello's) */
char obuf[HDR + MAX_PAYLOAD];
static char ibuf[4 * MAX_IN];
static size_t ilen;
/* A start's spec, while it comes in parts. */
static char *spec;
static size_t speclen;
static uint32_t specid;
static int specbad; /* its start failed already */

/* quit ends every process group boxer-procd started, then itself:
 * without its keeper nothing could read them or stop them. */
static void quit(int status, const char *why)
{
	if (why != NULL)
		dprintf(2, "boxer-procd: %s\n", why);
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].id != 0 && !procs[i].exited)
			kill(-procs[i].pid, SIGKILL);
	_exit(status);
}

static void write_all(const char *b, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			quit(1, "writing to the keeper: the channel is closed");
		b += w;
		n -= (size_t)w;
	}
}

/* emit writes a frame whose payload is already at obuf + HDR. */
void emit(int kind, int stream, uint32_t id, size_t n)
{
	put32(obuf, (uint32_t)n);
	obuf[4] = (char)kind;
	obuf[5] = (char)stream;
	obuf[6] = obuf[7] = 0;
	put32(obuf + 8, id);
	write_all(obuf, HDR + n);
}

void send32(int kind, int stream, uint32_t id, uint32_t v)
{
	put32(obuf + HDR, v);
	emit(kind, stream, id, 4);
}

void start_failed(uint32_t id, int err, const char *msg)
{
	put32(obuf + HDR, (uint32_t)err);
	size_t n = strlen(msg);
	if (n > MAX_PAYLOAD - 4)
		n = MAX_PAYLOAD - 4;
	memcpy(obuf + HDR + 4, msg, n);
	emit(K_START_FAILED, 0, id, 4 + n);
}

struct proc *find(uint32_t id)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i].id == id && id != 0)
			return &procs[i];
	return NULL;
}

void close_in(struct proc *p)
{
	if (p->in >= 0 && !p->pty)
		close(p->in);
	p->in = -1;
	free(p->buf);
	p->buf = NULL;
	p->buflen = p->bufoff = 0;
}

static void close_out(struct proc *p, int s)
{
	if (p->out[s] < 0)
		return;
	close(p->out[s]);
	p->out[s] = -1;
	if (p->pty)
		close_in(p); /* the master was stdin too */
}

/* pump reads one chunk of stream s of p, as far as its credit goes, and
 * sends it; at end of file (EIO from a PTY's master whose terminal has
 * closed) it sends eof. It returns 1 when it sent data. */
static int pump(struct proc *p, int s)
{
	if (p->out[s] < 0 || p->credit[s] == 0)
		return 0;
	size_t want = p->credit[s] < MAX_PAYLOAD ? p->credit[s] : MAX_PAYLOAD;
	ssize_t n = read(p->out[s], obuf + HDR, want);
	if (n > 0) {
		p->credit[s] -= (uint32_t)n;
		emit(K_OUT, s, p->id, (size_t)n);
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	close_out(p, s);
	emit(K_EOF, s, p->id, 0);
	return 0;
}

/* feed writes what p's stdin buffer holds, and returns the credit. */
static void feed(struct proc *p)
{
	if (p->in < 0)
		return;
	if (p->buflen > 0) {
		ssize_t n = write(p->in, p->buf + p->bufoff, p->buflen);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			/* The process closed its stdin: what is left is dropped,
			 * and its credit returned, so that the keeper never waits. */
			uint32_t dropped = p->buflen;
			close_in(p);
			send32(K_STDIN_CREDIT, 0, p->id, dropped);
			return;
		}
		p->bufoff += (uint32_t)n;
		p->buflen -= (uint32_t)n;
		if (p->buflen == 0)
			p->bufoff = 0;
		send32(K_STDIN_CREDIT, 0, p->id, (uint32_t)n);
	}
	if (p->buflen == 0 && p->closing && !p->pty)
		close_in(p);
}

/* reap takes every ended child: what it wrote before it ended goes out
 * (as far as credit goes) before its exit frame. */
static void reap(void)
{
	for (;;) {
		int ws;
		pid_t pid = waitpid(-1, &ws, WNOHANG);
		if (pid <= 0)
			return;
		struct proc *p = NULL;
		for (int i = 0; i < MAX_PROCS; i++)
			if (procs[i].id != 0 && procs[i].pid == pid && !procs[i].exited)
				p = &procs[i];
		if (p == NULL)
			continue;
		p->exited = 1;
		p->status = ws;
		for (int s = 1; s <= 2; s++)
			while (pump(p, s))
				;
		if (!p->pty)
			close_in(p);
		char *b = obuf + HDR;
		b[0] = (char)WIFSIGNALED(ws);
		b[1] = (char)(WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
		b[2] = (char)(WIFSIGNALED(ws) && WCOREDUMP(ws));
		b[3] = 0;
		emit(K_EXIT, 0, p->id, 4);
	}
}

static void hello(const char *b, uint32_t n)
{
	if (n != HELLO_LEN)
		quit(2, "a malformed hello from the keeper");
	window = get32(b + 16);
	if (window > MAX_CREDIT)
		window = MAX_CREDIT;
	free(spec);
	spec = NULL;
	speclen = 0;
	specid = 0;
	specbad = 0;
	char *r = obuf + HDR;
	memcpy(r, b, 16);
	uint32_t count = 0;
	char *e = r + 20;
	for (int i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &procs[i];
		if (p->id == 0)
			continue;
		p->credit[1] = p->out[1] >= 0 ? window : 0;
		p->credit[2] = p->out[2] >= 0 ? window : 0;
		int stdin_open = p->in >= 0 && !p->closing;
		put32(e, p->id);
		put32(e + 4, (uint32_t)p->pid);
		e[8] = (char)((p->exited ? E_EXITED : 0) | (p->pty ? E_PTY : 0) | (stdin_open ? E_STDIN : 0) |
			      (p->out[1] >= 0 ? E_STDOUT : 0) | (p->out[2] >= 0 ? E_STDERR : 0));
		e[9] = (char)(p->exited && WIFSIGNALED(p->status));
		e[10] = (char)(!p->exited ? 0 : WIFSIGNALED(p->status) ? WTERMSIG(p->status) : WEXITSTATUS(p->status));
		e[11] = 0;
		put32(e + 12, stdin_open ? STDIN_WINDOW - p->buflen : 0);
		e += ENTRY_LEN;
		count++;
	}
	put32(r + 16, count);
	emit(K_HELLO_REPLY, 0, 0, 20 + (size_t)count * ENTRY_LEN);
}

/* part takes a part of id's spec; last starts it. A start that failed
 * already (too long) drops the rest of its parts; another id's part drops
 * a start half sent (only the last one is kept). */
static void part(uint32_t id, const char *b, uint32_t n, int last)
{
	if (specid != id) {
		free(spec);
		spec = NULL;
		speclen = 0;
		specbad = 0;
		specid = id;
	}
	if (!specbad && speclen + n > MAX_SPEC) {
		start_failed(id, E2BIG, "the start's argv, env and cwd exceed 256 KiB");
		specbad = 1;
	}
	if (!specbad) {
		char *grown = realloc(spec, speclen + n + 1);
		if (grown == NULL) {
			start_failed(id, ENOMEM, "no memory for the start");
			specbad = 1;
		} else {
			spec = grown;
			memcpy(spec + speclen, b, n);
			speclen += n;
		}
	}
	if (!last)
		return;
	if (!specbad)
		start(id, spec, speclen);
	free(spec);
	spec = NULL;
	speclen = 0;
	specbad = 0;
	specid = 0;
}

/* frame acts on one of the keeper's frames. */
static void frame(int kind, int stream, uint32_t id, const char *b, uint32_t n)
{
	if (kind == K_HELLO) {
		hello(b, n);
		return;
	}
	if (id == 0)
		quit(2, "a frame from the keeper without a process id");
	if (kind == K_SPEC || kind == K_START) {
		part(id, b, n, kind == K_START);
		return;
	}
	struct proc *p = find(id);
	if (p == NULL) {
		dprintf(2, "boxer-procd: a frame of kind %d for process %u, which it does not hold\n", kind, id);
		return;
	}
	switch (kind) {
	case K_STDIN:
		if (p->in < 0 || p->closing)
			return;
		if (p->buf == NULL && (p->buf = malloc(STDIN_WINDOW)) == NULL)
			quit(1, "no memory for stdin");
		if (n > STDIN_WINDOW - p->buflen) {
			dprintf(2, "boxer-procd: stdin beyond its credit for process %u: dropped\n", id);
			n = STDIN_WINDOW - p->buflen;
		}
		if (p->bufoff + p->buflen + n > STDIN_WINDOW) {
			memmove(p->buf, p->buf + p->bufoff, p->buflen);
			p->bufoff = 0;
		}
		memcpy(p->buf + p->bufoff + p->buflen, b, n);
		p->buflen += n;
		feed(p);
		return;
	case K_STDIN_CLOSE:
		p->closing = 1;
		feed(p);
		return;
	case K_SIGNAL:
		if (n != 5)
			quit(2, "a malformed signal from the keeper");
		/* The group outlives its leader's end (its PID cannot be reused
		 * while the group exists); the process alone does not. */
		if (b[4])
			kill(-p->pid, (int)get32(b));
		else if (!p->exited)
			kill(p->pid, (int)get32(b));
		return;
	case K_RESIZE:
		if (n != 4)
			quit(2, "a malformed resize from the keeper");
		if (p->pty && p->out[1] >= 0) {
			struct winsize ws = {.ws_row = get16(b), .ws_col = get16(b + 2)};
			ioctl(p->out[1], TIOCSWINSZ, &ws);
		}
		return;
	case K_CREDIT:
		if (n != 4 || stream < 1 || stream > 2)
			quit(2, "a malformed credit from the keeper");
		if (p->out[stream] >= 0) {
			uint64_t c = (uint64_t)p->credit[stream] + get32(b);
			p->credit[stream] = c > MAX_CREDIT ? MAX_CREDIT : (uint32_t)c;
		}
		return;
	case K_RELEASE:
		if (!p->exited) {
			dprintf(2, "boxer-procd: release of process %u, which runs: ignored\n", id);
			return;
		}
		close_out(p, 1);
		close_out(p, 2);
		close_in(p);
		memset(p, 0, sizeof *p);
		emit(K_RELEASED, 0, id, 0);
		return;
	default:
		quit(2, "a frame of unknown kind from the keeper");
	}
}

/* input takes what came on stdin, frame by frame. */
static void input(void)
{
	ssize_t n = read(0, ibuf + ilen, sizeof ibuf - ilen);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		quit(0, n < 0 ? "reading from the keeper failed" : NULL);
	ilen += (size_t)n;
	size_t off = 0;
	while (ilen - off >= HDR) {
		char *h = ibuf + off;
		uint32_t len = get32(h);
		if (len > MAX_IN - HDR || h[6] != 0 || h[7] != 0)
			quit(2, "a malformed frame from the keeper");
		if (ilen - off < HDR + len)
			break;
		frame((unsigned char)h[4], (unsigned char)h[5], get32(h + 8), h + HDR, len);
		off += HDR + len;
	}
	memmove(ibuf, ibuf + off, ilen - off);
	ilen -= off;
}

/* ending is the signal that ends boxer-procd, once one came. */
static volatile sig_atomic_t ending;

static void on_signal(int sig) { if (sig != SIGCHLD) ending = sig; }

int main(int argc, char **argv)
{
	int quiet = argc == 2 && strcmp(argv[1], "-q") == 0;
	if (argc != 1 && !quiet) {
		dprintf(2, "usage: boxer-procd [-q] (its frames come on stdin; docs/internals.md)\n");
		return 125;
	}
	/* A signal ignored by whatever started boxer-procd is not ignored by
	 * its processes, as a runtime's exec's are not (execve keeps an
	 * ignored signal ignored): once here, not in each child. Through the
	 * kernel's call, not musl's, which refuses its own signals (32 to
	 * 34); the kernel's struct opens with the handler on every arch. */
	for (int sig = 1; sig < NSIG; sig++) {
		unsigned long old[4] = {0}, dfl[4] = {0};
		if (syscall(SYS_rt_sigaction, sig, NULL, old, (NSIG - 1) / 8) == 0 && old[0] == (unsigned long)SIG_IGN)
			syscall(SYS_rt_sigaction, sig, dfl, NULL, (NSIG - 1) / 8);
	}
	/* SIGCHLD, and SIGTERM, SIGINT and SIGHUP (which end boxer-procd and
	 * its processes, which would otherwise outlive it), are taken only
	 * inside ppoll, which they interrupt; SIGPIPE is ignored (a process
	 * that closes its stdin is an error from write). Each child gets
	 * them back as they were. */
	static const int taken[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};
	sigset_t mask, wait_mask;
	sigemptyset(&mask);
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
		sigaddset(&mask, taken[i]);
	sigprocmask(SIG_BLOCK, &mask, &wait_mask);
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
		sigdelset(&wait_mask, taken[i]);
		struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_NOCLDSTOP};
		sigaction(taken[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
	/* Beyond its stdio nothing is its processes' (an exec gives 0, 1, 2).
	 * Not dumpable: they (the same user) cannot open its /proc/PID/fd. */
	prctl(PR_SET_DUMPABLE, 0);
	if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	/* -q: stderr is its stdin's FIFO (a session's first program: it keeps
	 * that open for the next keeper): kept, unwritten; notes to /dev/null. */
	if (quiet) {
		int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fcntl(2, F_DUPFD_CLOEXEC, 3) < 0 || nul < 0 || dup2(nul, 2) < 0)
			return 125;
		close(nul);
	}

	static struct pollfd fds[1 + 3 * MAX_PROCS];
	static struct {
		struct proc *p;
		int s; /* 0: stdin, 1, 2: output */
	} who[1 + 3 * MAX_PROCS];
	for (;;) {
		nfds_t n = 0;
		fds[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		for (int i = 0; i < MAX_PROCS; i++) {
			struct proc *p = &procs[i];
			if (p->id == 0)
				continue;
			for (int s = 1; s <= 2; s++)
				if (p->out[s] >= 0 && p->credit[s] > 0) {
					who[n].p = p;
					who[n].s = s;
					fds[n++] = (struct pollfd){.fd = p->out[s], .events = POLLIN};
				}
			if (p->in >= 0 && p->buflen > 0) {
				who[n].p = p;
				who[n].s = 0;
				fds[n++] = (struct pollfd){.fd = p->in, .events = POLLOUT};
			}
		}
		int r = ppoll(fds, n, NULL, &wait_mask);
		if (ending != 0)
			quit(128 + ending, "ended by a signal: its processes end with it");
		reap();
		if (r <= 0)
			continue;
		for (nfds_t i = 1; i < n; i++) {
			if (fds[i].revents == 0 || who[i].p->id == 0)
				continue;
			if (who[i].s == 0)
				feed(who[i].p);
			else
				pump(who[i].p, who[i].s);
		}
		if (fds[0].revents != 0)
			input();
	}
}
