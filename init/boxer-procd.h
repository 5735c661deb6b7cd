/*
 * What boxer-procd's two files share (init/boxer-procd.c: the channel;
 * init/boxer-procd-start.c: starting a process): the frames, a process's
 * slot, and the calls between them.
 */
#ifndef BOXER_PROCD_H
#define BOXER_PROCD_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

enum {
	HDR = 12,              /* a frame's header */
	MAX_PAYLOAD = 32768,   /* the most payload in a frame out */
	MAX_IN = 4096,         /* the most a keeper's frame takes, header and all: PIPE_BUF */
	MAX_PROCS = 256,       /* processes held at once, running or not yet released */
	STDIN_WINDOW = 65536,  /* stdin buffered per process, at most */
	MAX_SPEC = 262144,     /* a start's argv, env and cwd together */
	MAX_CREDIT = 1 << 24,  /* output credit saturates here */
	HELLO_LEN = 20,        /* nonce (16) and window (4) */
	ENTRY_LEN = 16,        /* a process in hello-reply */
};

/* Kinds of frame: the keeper's, then boxer-procd's (high bit set). */
enum {
	K_HELLO = 1,
	K_SPEC = 2,        /* a part of a start's spec; more follows */
	K_START = 3,       /* the last part: start it */
	K_STDIN = 4,
	K_STDIN_CLOSE = 5,
	K_SIGNAL = 6,
	K_RESIZE = 7,
	K_CREDIT = 8,      /* output credit for a stream */
	K_RELEASE = 9,     /* forget an ended process */
	K_HELLO_REPLY = 0x81,
	K_STARTED = 0x82,
	K_START_FAILED = 0x83,
	K_OUT = 0x84,
	K_EOF = 0x85,
	K_EXIT = 0x86,
	K_STDIN_CREDIT = 0x87,
	K_RELEASED = 0x88,
};

/* Flags of a spec and of a hello-reply entry. */
enum { SPEC_PTY = 1, SPEC_STDIN = 2 };
enum { E_EXITED = 1, E_PTY = 2, E_STDIN = 4, E_STDOUT = 8, E_STDERR = 16 };

struct proc {
	uint32_t id; /* 0: a free slot */
	pid_t pid;
	int pty;
	int in;      /* stdin's writing end, or the PTY's master; -1 once closed */
	int out[3];  /* [1] stdout (or the PTY's master), [2] stderr; -1 at end of file */
	uint32_t credit[3];
	char *buf;   /* stdin not yet written, STDIN_WINDOW bytes once used */
	uint32_t buflen, bufoff;
	int closing; /* stdin-close came: close stdin once buf is written */
	int exited, status;
};

extern struct proc procs[MAX_PROCS];
extern uint32_t window;
extern char obuf[HDR + MAX_PAYLOAD];

static inline void put32(char *b, uint32_t v)
{
	b[0] = (char)v;
	b[1] = (char)(v >> 8);
	b[2] = (char)(v >> 16);
	b[3] = (char)(v >> 24);
}

static inline uint32_t get32(const char *b)
{
	const unsigned char *u = (const unsigned char *)b;
	return u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static inline uint16_t get16(const char *b)
{
	const unsigned char *u = (const unsigned char *)b;
	return (uint16_t)(u[0] | u[1] << 8);
}

void emit(int kind, int stream, uint32_t id, size_t n);
void send32(int kind, int stream, uint32_t id, uint32_t v);
void start_failed(uint32_t id, int err, const char *msg);
struct proc *find(uint32_t id);
void close_in(struct proc *p);
void start(uint32_t id, char *b, size_t n);

#endif
