/*
 * boxer-wrap runs a runtime binary the way one of boxer's wrapper files
 * says, in place of the /bin/sh scripts that did it before: a shell's
 * start (and the shim wrapper's grep) cost about 2 ms of CPU on each of
 * the four or five runtime commands of every sandbox (BENCH.md, issue 29).
 *
 * A wrapper file is the interpreter line naming boxer-wrap, then one
 * directive a line ('#' starts a comment):
 *
 *   #!/usr/local/lib/boxer/bin/boxer-wrap
 *   rlimit-core N      set RLIMIT_CORE (soft and hard) to N, as ulimit -c N
 *   rlimit-nofile N    set RLIMIT_NOFILE (soft and hard) to N, as ulimit -n N
 *   arg ARG            put ARG before the caller's arguments (repeatable)
 *   delete-root DIR    answer a redundant shim "delete" at once (below)
 *   delete-answer HEX  what to write on stdout then, in hexadecimal
 *   runc-fast start-delete
 *                      do runc's "start" and "delete" itself (below)
 *   exec PROGRAM       execute PROGRAM (PATH is searched without a '/')
 *   unshare NS,...     unshare(2) these namespaces (user, net) first
 *   hold ready         in place of exec: write a newline on stdout, then
 *                      wait for the end of stdin and exit 0
 *
 * The kernel runs it as "boxer-wrap FILE ARG...", so containerd, its shim
 * and boxer's reaper execute the file as they would a script.
 *
 * delete-root is for containerd's runc shim. After every task delete,
 * containerd 2.x runs "<shim> ... -namespace NS -id ID delete" in the
 * task's bundle, and the shim runs "runc delete --force" a second time
 * (see boxer's reaper package, shimScript). When runc (or runsc) has no
 * state left under DIR/NS naming ID and the bundle's rootfs is not
 * mounted, there is nothing to clean up: boxer-wrap writes the answer
 * (the shim's DeleteResponse, marshalled by boxer) and exits 0. Anything
 * it cannot be sure of goes to the real shim.
 *
 * runc-fast is for runc as containerd's runc shim runs it, for boxer's
 * sandboxes: "runc --root DIR [--log F] [--log-format F] start ID" and
 * "... delete ID". Each is a Go program's start (8-10 ms of CPU, the
 * same in wall time, on every sandbox) for a few system calls, which
 * boxer-wrap makes as runc 1.5 does (libcontainer's exec and destroy):
 *   start   a created container (its init alive, its exec.fifo present):
 *           open the FIFO, which lets the init execute the program, read
 *           its byte, remove it; if the init dies first, fail as runc.
 *   delete  a stopped container (its init gone, a zombie, or its PID
 *           reused): remove its cgroups, then its state directory.
 * Only when DIR/ID/state.json says no hooks, no Intel RDT, a PID
 * namespace of its own, cgroups under /sys/fs/cgroup not frozen, and it
 * holds nothing else unusual; anything else, or any step that fails
 * before the state is removed, goes to the real runc, which then does the
 * whole command as always.
 *
 * unshare and hold make a sandbox's user namespace (boxer's userns
 * package): boxer starts boxer-wrap as the namespace's owner, it unshares,
 * says so, and holds the namespace while boxer writes its maps and binds
 * it. util-linux's unshare running a shell did it before, two programs'
 * starts more.
 *
 * Errors are one line on stderr, "boxer-wrap: ...", and exit status 125.
 * Built static by 'make deps' and 'make build', as boxer-init is.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

enum { EXIT_WRAP = 125, MAX_FILE = 8192, MAX_ARGS = 64 };

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "boxer-wrap: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(EXIT_WRAP);
}

/* readAll reads at most max-1 bytes of path into buf, NUL-terminated, and
 * returns their count, or -1. */
static ssize_t readAll(const char *path, char *buf, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n < max - 1) {
		ssize_t r = read(fd, buf + n, max - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

static void setLimit(int resource, const char *value)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(value, &end, 10);
	if (errno || end == value || *end)
		die("not a number", value);
	struct rlimit rl = { .rlim_cur = n, .rlim_max = n };
	if (setrlimit(resource, &rl) < 0)
		die("setrlimit", strerror(errno));
}

/* flag returns the value of -name in args, or NULL. */
static const char *flag(int argc, char **argv, const char *name)
{
	for (int i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

/* mountedRootfs says whether DIR/rootfs is a mount point in mountinfo,
 * where it appears as " DIR/rootfs " (dir has no character mountinfo
 * escapes: the caller checks). Unsure (unreadable) counts as mounted. */
static int mountedRootfs(const char *dir)
{
	static char info[1 << 20];
	char needle[PATH_MAX + 16];
	if (snprintf(needle, sizeof needle, " %s/rootfs ", dir) >= (int)sizeof needle)
		return 1;
	ssize_t n = readAll("/proc/self/mountinfo", info, sizeof info);
	if (n < 0 || (size_t)n >= sizeof info - 1)
		return 1;
	return strstr(info, needle) != NULL;
}

/* stateLeft says whether the runtime keeps anything naming id in root/ns:
 * runc's directory root/ns/id, runsc's "<sandbox>_sandbox:<id>.state" and
 * ".lock", its control socket. Unsure counts as left. */
static int stateLeft(const char *root, const char *ns, const char *id)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof dir, "%s/%s", root, ns) >= (int)sizeof dir)
		return 1;
	DIR *d = opendir(dir);
	if (!d)
		return errno != ENOENT;
	int left = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, id)) {
			left = 1;
			break;
		}
	closedir(d);
	return left;
}

/* nothingToDelete says whether this is a shim "delete" with nothing left
 * for it to do (see the top of this file). */
static int nothingToDelete(const char *root, int argc, char **argv)
{
	if (argc < 1 || strcmp(argv[argc - 1], "delete") != 0)
		return 0;
	const char *ns = flag(argc, argv, "-namespace");
	const char *id = flag(argc, argv, "-id");
	if (!ns || !id || !*ns || !*id || strchr(ns, '/') || strchr(id, '/') || ns[0] == '.' || id[0] == '.')
		return 0;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return 0;
	/* mountinfo writes space, tab, newline and backslash as octal escapes. */
	if (strpbrk(cwd, " \t\n\\"))
		return 0;
	return !stateLeft(root, ns, id) && !mountedRootfs(cwd);
}

static int hexValue(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* writeHex writes the bytes that hex spells on stdout. */
static void writeHex(const char *hex)
{
	unsigned char out[256];
	size_t n = 0, len = strlen(hex);
	if (len % 2 || len / 2 > sizeof out)
		die("delete-answer: bad hexadecimal", hex);
	for (size_t i = 0; i < len; i += 2) {
		int hi = hexValue(hex[i]), lo = hexValue(hex[i + 1]);
		if (hi < 0 || lo < 0)
			die("delete-answer: bad hexadecimal", hex);
		out[n++] = (unsigned char)(hi << 4 | lo);
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(1, out + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("writing the delete answer", strerror(errno));
		off += (size_t)w;
	}
}

/* --- runc-fast: runc's start and delete for boxer's sandboxes --- */

enum { MAX_STATE = 1 << 20, MAX_CGROUPS = 32 };

/* A runc container as its state.json tells it. */
struct runcState {
	char dir[PATH_MAX];
	unsigned long long pid, start;
	int ncg;
	char *cgKey[MAX_CGROUPS], *cgPath[MAX_CGROUPS];
};

/* validName says whether s may name a file in a directory. */
static int validName(const char *s)
{
	return *s && s[0] != '.' && !strchr(s, '/') && strlen(s) < NAME_MAX;
}

/* runcCall parses the caller's arguments as containerd's runc shim writes
 * them for start and delete: --root DIR, --log FILE, --log-format F, then
 * the command and the container's ID, nothing more. It returns the
 * command, or NULL for anything else. */
static const char *runcCall(int argc, char **argv, const char **root, const char **id)
{
	*root = NULL;
	int i = 1;
	for (; i + 2 < argc; i += 2) {
		if (strcmp(argv[i], "--root") == 0)
			*root = argv[i + 1];
		else if (strcmp(argv[i], "--log") != 0 && strcmp(argv[i], "--log-format") != 0)
			break;
	}
	if (i + 2 != argc || !*root || (*root)[0] != '/')
		return NULL;
	*id = argv[i + 1];
	if ((strcmp(argv[i], "start") != 0 && strcmp(argv[i], "delete") != 0) || !validName(*id))
		return NULL;
	return argv[i];
}

/* jsonUint reads the number after key (a quoted key and its colon). Go's
 * encoding/json escapes quotes within strings, so key matches keys only. */
static int jsonUint(const char *json, const char *key, unsigned long long *v)
{
	const char *p = strstr(json, key);
	if (!p)
		return -1;
	p += strlen(key);
	char *end;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return errno || end == p ? -1 : 0;
}

/* jsonCgroups reads the object "cgroup_paths" in place (it cuts json):
 * controller names to absolute directories under /sys/fs/cgroup, with no
 * escapes, "..", or more than MAX_CGROUPS of them. */
static int jsonCgroups(char *json, struct runcState *st)
{
	const char key[] = "\"cgroup_paths\":{";
	char *p = strstr(json, key);
	if (!p)
		return -1;
	p += sizeof key - 1;
	st->ncg = 0;
	while (*p != '}') {
		if (st->ncg == MAX_CGROUPS || *p != '"')
			return -1;
		char *k = ++p;
		if (!(p = strpbrk(p, "\"\\")) || *p != '"' || p[1] != ':' || p[2] != '"')
			return -1;
		*p = 0;
		char *v = p += 3;
		if (!(p = strpbrk(p, "\"\\")) || *p != '"')
			return -1;
		*p++ = 0;
		if (strncmp(v, "/sys/fs/cgroup/", 15) != 0 || strstr(v, "/..") || strlen(v) > PATH_MAX - 32)
			return -1;
		st->cgKey[st->ncg] = k;
		st->cgPath[st->ncg++] = v;
		if (*p == ',')
			p++;
		else if (*p != '}')
			return -1;
	}
	return 0;
}

/* thawed says whether the container's cgroups are not frozen (runc calls
 * a frozen container paused). Unsure counts as frozen. */
static int thawed(const struct runcState *st)
{
	for (int i = 0; i < st->ncg; i++) {
		const char *file = strcmp(st->cgKey[i], "freezer") == 0 ? "freezer.state"
				   : *st->cgKey[i] == 0			   ? "cgroup.freeze"
									   : NULL;
		if (!file)
			continue;
		char path[PATH_MAX + 32], buf[64];
		snprintf(path, sizeof path, "%s/%s", st->cgPath[i], file);
		ssize_t n = readAll(path, buf, sizeof buf);
		if (n < 0 && errno == ENOENT)
			continue;
		if (n < 0 || strcmp(buf, *st->cgKey[i] ? "THAWED\n" : "0\n") != 0)
			return 0;
	}
	return 1;
}

/* unusualState says whether runc's state JSON names something runc-fast
 * leaves to runc: runc writes "Hooks" and "Systemd" only when there are
 * some, and the keys of Intel RDT and rootless cgroups only when in use.
 * Names are matched in any ASCII case, and only where a quote opens one:
 * musl's strcasestr, one tolower a byte for each byte and name, cost a
 * millisecond on runc's 22 kB state. */
static int unusualState(const char *json)
{
	static const char *const names[] = { "hooks\":", "systemd\":", "intel_rdt", "rootless" };
	for (const char *p = json; (p = strchr(p, '"')) != NULL; p++) {
		int c = p[1] | 0x20; /* an ASCII letter in lower case */
		for (size_t i = 0; i < sizeof names / sizeof *names; i++)
			if (c == names[i][0] && strncasecmp(p + 1, names[i], strlen(names[i])) == 0)
				return 1;
	}
	return 0;
}

/* loadState reads ROOT/ID/state.json and says whether runc-fast may act
 * on it: no hooks, no Intel RDT, a PID namespace of its own, cgroups it
 * understands, not frozen. */
static int loadState(const char *root, const char *id, struct runcState *st)
{
	static char json[MAX_STATE];
	char path[PATH_MAX + 32];
	if (snprintf(st->dir, sizeof st->dir, "%s/%s", root, id) >= (int)sizeof st->dir - 16)
		return 0;
	snprintf(path, sizeof path, "%s/state.json", st->dir);
	ssize_t n = readAll(path, json, sizeof json);
	if (n <= 0 || (size_t)n >= sizeof json - 1)
		return 0;
	if (unusualState(json))
		return 0;
	if (!strstr(json, "{\"type\":\"NEWPID\"}"))
		return 0;
	if (jsonUint(json, "\"init_process_pid\":", &st->pid) < 0 || st->pid == 0 ||
	    jsonUint(json, "\"init_process_start\":", &st->start) < 0)
		return 0;
	return jsonCgroups(json, st) == 0 && thawed(st);
}

/* initAlive says whether the container's init still runs, as runc's
 * status does: its PID there, not a zombie, started when runc started
 * it. 0: gone; -1: unsure. */
static int initAlive(const struct runcState *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%llu/stat", st->pid);
	if (readAll(path, buf, sizeof buf) < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -1;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	p += 2; /* the third field, the state */
	if (*p == 'Z' || *p == 'X')
		return 0;
	for (int field = 3; field < 22; field++) /* to the 22nd, starttime */
		if (!(p = strchr(p, ' ')) || !*++p)
			return -1;
	char *end;
	unsigned long long start = strtoull(p, &end, 10);
	if (end == p)
		return -1;
	return start == st->start;
}

static void onAlarm(int sig)
{
	(void)sig;
}

/* fastStart starts a created container (libcontainer's exec). It returns
 * 0 when the container is not one it may start, for the real runc. */
static int fastStart(const char *root, const char *id)
{
	struct runcState st;
	struct stat sb;
	char fifo[PATH_MAX + 32];
	if (!loadState(root, id, &st) || initAlive(&st) != 1)
		return 0;
	snprintf(fifo, sizeof fifo, "%s/exec.fifo", st.dir);
	if (lstat(fifo, &sb) < 0 || !S_ISFIFO(sb.st_mode))
		return 0;
	/* The open blocks until the init opens its end; every 100 ms an
	 * alarm interrupts it to check that the init is still there. */
	struct sigaction sa = { .sa_handler = onAlarm };
	struct itimerval tick = { { 0, 100000 }, { 0, 100000 } }, off = { { 0, 0 }, { 0, 0 } };
	if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &tick, NULL) < 0)
		die("setting a timer", strerror(errno));
	int fd;
	while ((fd = open(fifo, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno != EINTR)
			die("opening the exec fifo", strerror(errno));
		if (initAlive(&st) == 0) {
			/* It may have started, run and ended meanwhile: then
			 * its byte is in the FIFO. */
			fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			break;
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	char b[16];
	ssize_t got = 0, r;
	while (fd >= 0 && (r = read(fd, b, sizeof b)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		got += r;
	}
	if (got <= 0)
		die("container process is already dead", NULL);
	close(fd);
	if (unlink(fifo) < 0 && errno != ENOENT)
		die("removing the exec fifo", strerror(errno));
	return 1;
}

/* fastDelete removes a stopped container (libcontainer's destroy): its
 * cgroups, then its state directory. It returns 0, having removed
 * nothing but empty cgroups, when the real runc is to do it. */
static int fastDelete(const char *root, const char *id)
{
	struct runcState st;
	if (!loadState(root, id, &st) || initAlive(&st) != 0)
		return 0;
	DIR *d = opendir(st.dir);
	if (!d)
		return 0;
	struct dirent *e;
	int plain = 1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && e->d_type != DT_REG && e->d_type != DT_FIFO)
			plain = 0;
	if (!plain) {
		closedir(d);
		return 0;
	}
	for (int i = 0; i < st.ncg; i++)
		if (rmdir(st.cgPath[i]) < 0 && errno != ENOENT) {
			closedir(d);
			return 0;
		}
	rewinddir(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			die("removing the container's state", strerror(errno));
	closedir(d);
	if (rmdir(st.dir) < 0 && errno != ENOENT)
		die("removing the container's state", strerror(errno));
	return 1;
}

/* namespaces parses unshare's value: user, net, comma-separated. */
static int namespaces(const char *value)
{
	int flags = 0;
	char buf[64];
	if (strlen(value) >= sizeof buf)
		die("unshare: unknown namespaces", value);
	strcpy(buf, value);
	char *save;
	for (char *ns = strtok_r(buf, ",", &save); ns; ns = strtok_r(NULL, ",", &save)) {
		if (strcmp(ns, "user") == 0)
			flags |= CLONE_NEWUSER;
		else if (strcmp(ns, "net") == 0)
			flags |= CLONE_NEWNET;
		else
			die("unshare: unknown namespace", ns);
	}
	return flags;
}

/* hold says it is ready on stdout and waits for stdin's end. */
static int hold(void)
{
	char b[64];
	ssize_t r;
	while ((r = write(1, "\n", 1)) < 0 && errno == EINTR)
		;
	if (r != 1)
		die("hold: writing", strerror(errno));
	while ((r = read(0, b, sizeof b)) != 0)
		if (r < 0 && errno != EINTR)
			die("hold: reading", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	static char file[MAX_FILE];
	if (argc < 2)
		die("usage: a wrapper file's interpreter line: #!boxer-wrap", NULL);
	if (readAll(argv[1], file, sizeof file) < 0)
		die(argv[1], strerror(errno));
	/* The caller's arguments, after the wrapper file's path, which the
	 * kernel put in place of their argv[0] (a script's "$0"). */
	int cargc = argc - 1;
	char **cargv = argv + 1;

	char *prog = NULL, *deleteRoot = NULL, *deleteAnswer = NULL;
	int runcFast = 0, unshareFlags = 0, holdOn = 0;
	char *pre[MAX_ARGS];
	int npre = 0;
	char *save;
	int first = 1;
	for (char *line = strtok_r(file, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (first) {
			first = 0;
			if (strncmp(line, "#!", 2) == 0)
				continue;
		}
		if (line[0] == '#' || line[0] == 0)
			continue;
		char *value = strchr(line, ' ');
		if (!value)
			die("a directive without a value", line);
		*value++ = 0;
		if (strcmp(line, "exec") == 0)
			prog = value;
		else if (strcmp(line, "arg") == 0) {
			if (npre == MAX_ARGS)
				die("too many arg directives", NULL);
			pre[npre++] = value;
		} else if (strcmp(line, "rlimit-core") == 0)
			setLimit(RLIMIT_CORE, value);
		else if (strcmp(line, "rlimit-nofile") == 0)
			setLimit(RLIMIT_NOFILE, value);
		else if (strcmp(line, "delete-root") == 0)
			deleteRoot = value;
		else if (strcmp(line, "delete-answer") == 0)
			deleteAnswer = value;
		else if (strcmp(line, "unshare") == 0)
			unshareFlags = namespaces(value);
		else if (strcmp(line, "hold") == 0) {
			if (strcmp(value, "ready") != 0)
				die("hold: only ready is known", value);
			holdOn = 1;
		} else if (strcmp(line, "runc-fast") == 0) {
			if (strcmp(value, "start-delete") != 0)
				die("runc-fast: only start-delete is known", value);
			runcFast = 1;
		}
		else
			die("unknown directive", line);
	}
	if (unshareFlags && unshare(unshareFlags) < 0)
		die("unshare", strerror(errno));
	if (holdOn)
		return hold();
	if (!prog)
		die(argv[1], "no exec directive");
	if (deleteRoot && deleteAnswer && nothingToDelete(deleteRoot, cargc, cargv)) {
		writeHex(deleteAnswer);
		return 0;
	}
	const char *root, *id, *cmd;
	if (runcFast && (cmd = runcCall(cargc, cargv, &root, &id)) != NULL &&
	    (strcmp(cmd, "start") == 0 ? fastStart(root, id) : fastDelete(root, id)))
		return 0;

	char **args = calloc((size_t)(1 + npre + cargc + 1), sizeof *args);
	if (!args)
		die("out of memory", NULL);
	int n = 0;
	args[n++] = prog;
	for (int i = 0; i < npre; i++)
		args[n++] = pre[i];
	for (int i = 1; i < cargc; i++)
		args[n++] = cargv[i];
	args[n] = NULL;
	execvp(prog, args);
	die(prog, strerror(errno));
}
