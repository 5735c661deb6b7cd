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
 *   exec PROGRAM       execute PROGRAM (PATH is searched without a '/')
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
 * Errors are one line on stderr, "boxer-wrap: ...", and exit status 125.
 * Built static by 'make deps' and 'make build', as boxer-init is.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
		else
			die("unknown directive", line);
	}
	if (!prog)
		die(argv[1], "no exec directive");
	if (deleteRoot && deleteAnswer && nothingToDelete(deleteRoot, cargc, cargv)) {
		writeHex(deleteAnswer);
		return 0;
	}

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
