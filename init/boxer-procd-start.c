/*
 * boxer-procd's start of a process (init/boxer-procd.c is the channel):
 * a whole spec parsed, the program found on the spec's PATH as boxer-init
 * finds it, pipes or a terminal, and the child, by vfork.
 */
#include "boxer-procd.h"

/* executable says whether path is a file that may be executed, as Go's
 * exec.LookPath's findExecutable does (boxer-init's, as runc finds a
 * program); else errno says why not. */
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

/* resolve finds the file to execute for name on the PATH of env, as
 * boxer-init does; NULL when there is none. */
static const char *resolve(const char *name, char **env, char *buf, size_t size)
{
	if (strchr(name, '/') != NULL)
		return name;
	const char *path = "";
	for (char **e = env; *e != NULL; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
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
	return NULL;
}

/* strings splits n NUL-ended strings off *b (of *left bytes) into v. */
static int strings(char **b, size_t *left, char **v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		char *z = memchr(*b, '\0', *left);
		if (z == NULL)
			return -1;
		v[i] = *b;
		*left -= (size_t)(z - *b) + 1;
		*b = z + 1;
	}
	v[n] = NULL;
	return 0;
}

/* spawned is the vfork child's errno when it could not become the
 * program, and failed the step it failed at, in memory it shares with
 * boxer-procd until it executes the program. */
static volatile int spawned;
static const char *volatile failed;

/* start starts the process a whole spec describes: flags (1), a zero
 * byte, rows and cols (2 each), two zero bytes, argc and envc (4 each),
 * then cwd, argv and env, each string ended by a NUL. */
void start(uint32_t id, char *b, size_t n)
{
	char msg[256], path[4096];
	if (n < 16 || b[1] != 0 || b[6] != 0 || b[7] != 0) {
		start_failed(id, EINVAL, "a malformed start");
		return;
	}
	int flags = (unsigned char)b[0];
	uint16_t rows = get16(b + 2), cols = get16(b + 4);
	uint32_t argc = get32(b + 8), envc = get32(b + 12);
	if (find(id) != NULL) {
		start_failed(id, EEXIST, "the id is in use");
		return;
	}
	struct proc *p = NULL;
	for (int i = 0; i < MAX_PROCS && p == NULL; i++)
		if (procs[i].id == 0)
			p = &procs[i];
	if (p == NULL) {
		start_failed(id, EAGAIN, "too many processes: release ended ones first");
		return;
	}
	/* Each string takes a byte at least: the counts are checked before
	 * anything is allocated for them. */
	if (argc == 0 || (uint64_t)argc + envc > n - 16) {
		start_failed(id, EINVAL, "a malformed start: no argv, or counts beyond its size");
		return;
	}
	char **argv = calloc((size_t)argc + 1, sizeof *argv), **envp = calloc((size_t)envc + 1, sizeof *envp);
	char *cwd = b + 16;
	size_t left = n - 16;
	char *z = memchr(cwd, '\0', left);
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, master = -1, slave = -1;
	if (argv == NULL || envp == NULL) {
		start_failed(id, ENOMEM, "no memory for the start");
		goto done;
	}
	if (z == NULL) {
		start_failed(id, EINVAL, "a malformed start: no cwd");
		goto done;
	}
	char *s = z + 1;
	left -= (size_t)(z - cwd) + 1;
	if (strings(&s, &left, argv, argc) < 0 || strings(&s, &left, envp, envc) < 0 || left != 0) {
		start_failed(id, EINVAL, "a malformed start: its strings do not match its counts");
		goto done;
	}
	const char *volatile file = resolve(argv[0], envp, path, sizeof path);
	if (file == NULL) {
		snprintf(msg, sizeof msg, "exec: \"%.200s\": executable file not found in $PATH", argv[0]);
		start_failed(id, ENOENT, msg);
		goto done;
	}
	if (flags & SPEC_PTY) {
		struct winsize ws = {.ws_row = rows, .ws_col = cols};
		const char *name;
		if ((master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 || grantpt(master) < 0 ||
		    unlockpt(master) < 0 || (name = ptsname(master)) == NULL ||
		    (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 || ioctl(master, TIOCSWINSZ, &ws) < 0) {
			snprintf(msg, sizeof msg, "opening a terminal: %s", strerror(errno));
			start_failed(id, errno, msg);
			goto done;
		}
	} else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		snprintf(msg, sizeof msg, "making pipes: %s", strerror(errno));
		start_failed(id, errno, msg);
		goto done;
	}

	/* vfork, as boxer-init starts its program: under gVisor it saves
	 * copying an address space, and a failed chdir or execve is known
	 * before vfork returns. The child only sets up its descriptors,
	 * group and signals, then executes the program. */
	sigset_t none;
	sigemptyset(&none);
	spawned = 0;
	failed = NULL;
	pid_t pid = vfork();
	if (pid == 0) {
		if (slave >= 0) {
			if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) {
				failed = "taking the terminal";
				goto fail;
			}
			dup2(slave, 0);
			dup2(slave, 1);
			dup2(slave, 2);
		} else {
			setpgid(0, 0);
			dup2(in[0], 0);
			dup2(out[1], 1);
			dup2(err[1], 2);
		}
		if (*cwd != '\0' && chdir(cwd) < 0) {
			failed = "chdir";
			goto fail;
		}
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(file, argv, envp);
		failed = "exec";
	fail:
		spawned = errno;
		_exit(127);
	}
	if (pid < 0 || spawned != 0) {
		int e = pid < 0 ? errno : spawned;
		if (pid > 0)
			waitpid(pid, NULL, 0);
		if (pid < 0)
			snprintf(msg, sizeof msg, "vfork: %s", strerror(e));
		else if (strcmp(failed, "chdir") == 0)
			snprintf(msg, sizeof msg, "chdir to %.200s: %s", cwd, strerror(e));
		else if (strcmp(failed, "exec") == 0)
			snprintf(msg, sizeof msg, "exec: \"%.200s\": %s", argv[0], e == ENOEXEC ? "exec format error" : strerror(e));
		else
			snprintf(msg, sizeof msg, "%s: %s", failed, strerror(e));
		start_failed(id, e, msg);
		goto done;
	}

	memset(p, 0, sizeof *p);
	p->id = id;
	p->pid = pid;
	p->pty = slave >= 0;
	p->out[0] = -1;
	if (p->pty) {
		p->in = p->out[1] = master;
		p->out[2] = -1;
		master = -1;
	} else {
		p->in = in[1];
		p->out[1] = out[0];
		p->out[2] = err[0];
		in[1] = out[0] = err[0] = -1;
	}
	for (int s = 0; s <= 2; s++)
		if (p->out[s] >= 0)
			fcntl(p->out[s], F_SETFL, O_NONBLOCK);
	if (p->in >= 0)
		fcntl(p->in, F_SETFL, O_NONBLOCK);
	p->credit[1] = p->out[1] >= 0 ? window : 0;
	p->credit[2] = p->out[2] >= 0 ? window : 0;
	send32(K_STARTED, 0, id, (uint32_t)pid);
	if (flags & SPEC_STDIN)
		send32(K_STDIN_CREDIT, 0, id, STDIN_WINDOW);
	if (!(flags & SPEC_STDIN)) {
		/* An empty stdin: end of file at once (a terminal's stays). */
		if (p->pty)
			p->in = -1;
		else
			close_in(p);
	}
done:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (master >= 0)
		close(master);
	if (slave >= 0)
		close(slave);
	free(argv);
	free(envp);
}
