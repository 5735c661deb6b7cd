/*
 * boxer-init is PID 1 of every boxer sandbox (docs/reference.md, "PID 1"):
 * it starts the program as its only child, forwards to it every signal
 * it gets, reaps every orphan the PID namespace hands it, and exits with
 * the program's status as a shell reports it (128+N for a death by
 * signal N) once the program has ended; the kernel then ends whatever is
 * left in the namespace.
 *
 *   boxer-init [-g] [-a] [-t SECONDS] [--] program [argument...]
 *   boxer-init -k SIGNAL PID
 *
 * -g holds the program until a line comes on stdin (a sandbox made before
 * its request: the gate), read a byte at a time so that nothing after the
 * line is taken from the program.
 *
 * -a is for a session's processes, which boxer execs in a running sandbox
 * with boxer-init before them (not as PID 1): boxer-init leads a process
 * group of its own, which the program and what it starts join, and says
 * its PID in the sandbox as the first line on stdout, "boxer-init: pid N",
 * before the program exists to write anything: under gVisor the host
 * knows only the PID of runsc's exec process, and a signal must be sent
 * from inside.
 *
 * -t ends boxer-init SECONDS after the program started, whatever the
 * program does (a session's lifetime, when its first program is not a
 * sleep but its interpreter): as PID 1, its exit ends every process in
 * the namespace, and no process in it can stop or delay PID 1. The time
 * is the monotonic clock's, which gVisor carries across a checkpoint.
 *
 * -k sends SIGNAL (a number) to the process PID that -a announced, from
 * inside the sandbox: SIGKILL to its whole group (boxer-init cannot pass
 * on a SIGKILL, and what the program started should end too), any other
 * signal to boxer-init, which passes it on to the program.
 *
 * It runs as the sandbox's user, without capabilities, under the
 * sandbox's seccomp filter: it needs no more than vfork, execve, read,
 * write, wait4, kill, rt_sigprocmask and rt_sigtimedwait. One process,
 * one thread: it takes one task of the sandbox's pids budget, which boxer
 * adds to the request's.
 *
 * The program is found as runc finds a container's (Go's exec.LookPath)
 * and executed with execve only, never through a shell. When it cannot
 * be executed, the one line "boxer-init: exec: ..." on stderr says why
 * (the runtime's words) and the status is 127 (not found) or 126.
 *
 * Built static by 'make deps' and 'make build'; boxer puts it in each
 * sandbox's read-only /code, as /code/.boxer-init.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Exit statuses, as a shell and runc report them. */
enum { EXIT_USAGE = 125, EXIT_CANNOT_EXEC = 126, EXIT_NOT_FOUND = 127 };

/* A failure to execute the program. */
struct failure {
	int err;      /* errno */
	int notfound; /* the name was not found on PATH */
};

static void die(int status, const char *what)
{
	dprintf(2, "boxer-init: %s: %s\n", what, strerror(errno));
	_exit(status);
}

/* executable says whether path is a file that may be executed, as Go's
 * exec.LookPath's findExecutable does; else errno says why not. */
static int executable(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return 0;
	}
	if ((st.st_mode & 0111) == 0) {
		errno = EACCES;
		return 0;
	}
	return 1;
}

/* resolve finds the file to execute for name: a name with a slash is a
 * path; any other is looked up on PATH, an empty entry meaning the working
 * directory. It returns NULL, with f filled in, when there is none. */
static const char *resolve(const char *name, char *buf, size_t size, struct failure *f)
{
	if (strchr(name, '/') != NULL)
		return name;
	const char *path = getenv("PATH");
	if (path == NULL)
		path = "";
	size_t n = strlen(name);
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t len = (size_t)(end - p);
		if (len + 1 + n + 1 <= size) {
			if (len == 0) {
				buf[0] = '.';
				len = 1;
			} else {
				memcpy(buf, p, len);
			}
			buf[len] = '/';
			memcpy(buf + len + 1, name, n + 1);
			if (executable(buf))
				return buf;
		}
		if (*end == '\0')
			break;
		p = end;
	}
	f->err = ENOENT;
	f->notfound = 1;
	return NULL;
}

/* report says on stderr why name could not be executed, in the words runc
 * uses, and returns the status that goes with it. */
static int report(const char *name, const struct failure *f)
{
	if (f->notfound) {
		dprintf(2, "boxer-init: exec: \"%s\": executable file not found in $PATH\n", name);
		return EXIT_NOT_FOUND;
	}
	const char *why = f->err == ENOEXEC ? "exec format error" : strerror(f->err);
	char lower[128];
	size_t i = 0;
	for (; why[i] != '\0' && i + 1 < sizeof lower; i++)
		lower[i] = (why[i] >= 'A' && why[i] <= 'Z') ? (char)(why[i] - 'A' + 'a') : why[i];
	lower[i] = '\0';
	dprintf(2, "boxer-init: exec: \"%s\": %s\n", name, lower);
	return f->err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}

/* gate reads stdin up to and including the first newline, one byte at a
 * time; it exits, as the shell gate did, when stdin ends first. */
static void gate(void)
{
	for (;;) {
		char c;
		ssize_t n = read(0, &c, 1);
		if (n == 1 && c == '\n')
			return;
		if (n == 0)
			_exit(1);
		if (n < 0 && errno != EINTR)
			die(1, "reading the gate");
	}
}

/* status is how a shell reports a child's end. */
static int status(int ws)
{
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return WEXITSTATUS(ws);
}

/* spawned is the child's errno when it could not execute the program,
 * set by the vfork child in memory it shares with boxer-init. */
static volatile int spawned;

/* spawn starts the program as boxer-init's child with the signal mask
 * mask and returns its PID; on failure it returns 0 with f filled in.
 * vfork, not fork: the child shares boxer-init's memory until it executes
 * the program, which under gVisor saves copying an address space, and a
 * failed execve is known before vfork returns. Not posix_spawn: glibc's
 * resets each signal's action in the child first (122 rt_sigaction calls
 * for boxer-init, whose mask holds every signal), about 2.5 ms under
 * gVisor's ptrace platform, where a system call costs some 20 us; boxer-
 * init sets no handler, and execve resets handlers anyway. */
static pid_t spawn(const char *file, char **args, const sigset_t *mask, struct failure *f)
{
	spawned = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, mask, NULL);
		execve(file, args, environ);
		spawned = errno;
		_exit(EXIT_CANNOT_EXEC);
	}
	if (pid < 0) {
		f->err = errno;
		return 0;
	}
	if (spawned != 0) {
		f->err = spawned;
		waitpid(pid, NULL, 0);
		return 0;
	}
	return pid;
}

/* signal_process is -k: it sends sig to the process pid announced with
 * -a, or to its group for SIGKILL. */
static int signal_process(const char *sig, const char *pid)
{
	char *end;
	long s = strtol(sig, &end, 10), p;
	if (*sig == '\0' || *end != '\0' || s <= 0 || s >= NSIG)
		goto usage;
	p = strtol(pid, &end, 10);
	if (*pid == '\0' || *end != '\0' || p <= 1)
		goto usage;
	if (kill(s == SIGKILL ? (pid_t)-p : (pid_t)p, (int)s) < 0) {
		dprintf(2, "boxer-init: kill %ld: %s\n", p, strerror(errno));
		return 1;
	}
	return 0;
usage:
	dprintf(2, "usage: boxer-init -k SIGNAL PID\n");
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	int gated = 0, announce = 0, i = 1;
	long limit = 0;
	if (argc == 4 && strcmp(argv[1], "-k") == 0)
		return signal_process(argv[2], argv[3]);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "-g") == 0) {
			gated = 1;
		} else if (strcmp(argv[i], "-a") == 0) {
			announce = 1;
		} else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
			char *end;
			limit = strtol(argv[++i], &end, 10);
			if (*argv[i] == '\0' || *end != '\0' || limit <= 0) {
				dprintf(2, "boxer-init: -t wants a number of seconds, not %s\n", argv[i]);
				return EXIT_USAGE;
			}
		} else {
			dprintf(2, "boxer-init: unknown flag %s\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		dprintf(2, "usage: boxer-init [-g] [-a] [-t SECONDS] [--] program [argument...]\n");
		return EXIT_USAGE;
	}
	char **args = argv + i;

	/* Every signal is blocked and taken with sigwaitinfo: a blocked signal
	 * is queued even for a PID 1 whose action is the default, which the
	 * kernel would otherwise drop. The program gets the mask boxer-init
	 * was started with. */
	sigset_t all, orig;
	sigfillset(&all);
	if (sigprocmask(SIG_SETMASK, &all, &orig) < 0)
		die(EXIT_USAGE, "blocking signals");

	if (gated)
		gate();
	if (announce) {
		/* A process started on a terminal already leads its session and
		 * group (EPERM): the program stays in the foreground group. */
		setpgid(0, 0);
		dprintf(1, "boxer-init: pid %d\n", (int)getpid());
		/* gVisor's terminal gets its size from the host a moment after
		 * the process starts: the program should not see 0x0. */
		struct winsize ws;
		for (int tries = 0; tries < 100 && ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_col == 0; tries++)
			usleep(10000);
	}

	char buf[4096];
	struct failure f = {0};
	const char *file = resolve(args[0], buf, sizeof buf, &f);
	pid_t child = 0;
	if (file != NULL)
		child = spawn(file, args, &orig, &f);
	if (child <= 0)
		return report(args[0], &f);

	struct timespec end = {0};
	if (limit > 0) {
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += limit;
	}
	for (;;) {
		siginfo_t si;
		int sig;
		if (limit > 0) {
			struct timespec now, left;
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			if (left.tv_sec < 0)
				return 128 + SIGKILL;
			sig = sigtimedwait(&all, &si, &left);
		} else {
			sig = sigwaitinfo(&all, &si);
		}
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(child, sig);
			continue;
		}
		/* Signals of one kind coalesce: reap every child that has ended. */
		for (;;) {
			int ws;
			pid_t pid = waitpid(-1, &ws, WNOHANG);
			if (pid <= 0)
				break;
			if (pid == child)
				return status(ws);
		}
	}
}
