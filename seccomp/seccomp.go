// Package seccomp holds boxer's default-deny seccomp allowlist as Go data.
//
// The profile starts from Docker's default profile (moby/profiles) and removes
// what untrusted code has no business calling: tracing, namespaces, mounts,
// keyrings, BPF, perf, kernel modules, io_uring, userfaultfd, file handles and
// the 32-bit compat entry points. Anything not listed fails with EPERM.
package seccomp

import (
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Allowed is the alphabetised list of syscalls the default profile allows
// without conditions. A change here is a reviewed change: TestAllowedPinned
// lists the same names.
var Allowed = []string{
	"accept",
	"accept4",
	"access",
	"alarm",
	"bind",
	"brk",
	"cachestat", // kernel v6.5
	"capget",
	"capset",
	"chdir",
	"chmod",
	"chown",
	"clock_getres",
	"clock_gettime",
	"clock_nanosleep",
	"close",
	"close_range",
	"connect",
	"copy_file_range",
	"creat",
	"dup",
	"dup2",
	"dup3",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_pwait",
	"epoll_pwait2",
	"epoll_wait",
	"eventfd",
	"eventfd2",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"faccessat",
	"faccessat2",
	"fadvise64",
	"fallocate",
	"fchdir",
	"fchmod",
	"fchmodat",
	"fchmodat2", // kernel v6.6
	"fchown",
	"fchownat",
	"fcntl",
	"fdatasync",
	"fgetxattr",
	"flistxattr",
	"flock",
	"fork",
	"fremovexattr",
	"fsetxattr",
	"fstat",
	"fstatfs",
	"fsync",
	"ftruncate",
	"futex",
	"futex_requeue", // kernel v6.7
	"futex_wait",    // kernel v6.7
	"futex_waitv",
	"futex_wake", // kernel v6.7
	"futimesat",
	"getcpu",
	"getcwd",
	"getdents",
	"getdents64",
	"getegid",
	"geteuid",
	"getgid",
	"getgroups",
	"getitimer",
	"getpeername",
	"getpgid",
	"getpgrp",
	"getpid",
	"getppid",
	"getpriority",
	"getrandom",
	"getresgid",
	"getresuid",
	"getrlimit",
	"get_robust_list",
	"getrusage",
	"getsid",
	"getsockname",
	"getsockopt",
	"gettid",
	"gettimeofday",
	"getuid",
	"getxattr",
	"inotify_add_watch",
	"inotify_init",
	"inotify_init1",
	"inotify_rm_watch",
	"ioctl",
	"kill",
	"landlock_add_rule",
	"landlock_create_ruleset",
	"landlock_restrict_self",
	"lchown",
	"lgetxattr",
	"link",
	"linkat",
	"listen",
	"listxattr",
	"llistxattr",
	"lremovexattr",
	"lseek",
	"lsetxattr",
	"lstat",
	"madvise",
	"membarrier",
	"memfd_create",
	"mincore",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"mlock",
	"mlock2",
	"mlockall",
	"mmap",
	"mprotect",
	"mq_getsetattr",
	"mq_notify",
	"mq_open",
	"mq_timedreceive",
	"mq_timedsend",
	"mq_unlink",
	"mremap",
	"msgctl",
	"msgget",
	"msgrcv",
	"msgsnd",
	"msync",
	"munlock",
	"munlockall",
	"munmap",
	"nanosleep",
	"newfstatat",
	"open",
	"openat",
	"openat2",
	"pause",
	"pidfd_open",
	"pidfd_send_signal",
	"pipe",
	"pipe2",
	"poll",
	"ppoll",
	"prctl",
	"pread64",
	"preadv",
	"preadv2",
	"prlimit64",
	"pselect6",
	"pwrite64",
	"pwritev",
	"pwritev2",
	"read",
	"readahead",
	"readlink",
	"readlinkat",
	"readv",
	"recvfrom",
	"recvmmsg",
	"recvmsg",
	"removexattr",
	"rename",
	"renameat",
	"renameat2",
	"restart_syscall",
	"rmdir",
	"rseq",
	"rt_sigaction",
	"rt_sigpending",
	"rt_sigprocmask",
	"rt_sigqueueinfo",
	"rt_sigreturn",
	"rt_sigsuspend",
	"rt_sigtimedwait",
	"rt_tgsigqueueinfo",
	"sched_getaffinity",
	"sched_getattr",
	"sched_getparam",
	"sched_get_priority_max",
	"sched_get_priority_min",
	"sched_getscheduler",
	"sched_rr_get_interval",
	"sched_setaffinity",
	"sched_setattr",
	"sched_setparam",
	"sched_setscheduler",
	"sched_yield",
	"seccomp",
	"select",
	"semctl",
	"semget",
	"semop",
	"semtimedop",
	"sendfile",
	"sendmmsg",
	"sendmsg",
	"sendto",
	"setfsgid",
	"setfsuid",
	"setgid",
	"setgroups",
	"setitimer",
	"setpgid",
	"setpriority",
	"setregid",
	"setresgid",
	"setresuid",
	"setreuid",
	"setrlimit",
	"set_robust_list",
	"setsid",
	"setsockopt",
	"set_tid_address",
	"setuid",
	"setxattr",
	"shmat",
	"shmctl",
	"shmdt",
	"shmget",
	"shutdown",
	"sigaltstack",
	"signalfd",
	"signalfd4",
	"socketpair",
	"splice",
	"stat",
	"statfs",
	"statx",
	"symlink",
	"symlinkat",
	"sync",
	"sync_file_range",
	"syncfs",
	"sysinfo",
	"tee",
	"tgkill",
	"time",
	"timer_create",
	"timer_delete",
	"timer_getoverrun",
	"timer_gettime",
	"timer_settime",
	"timerfd_create",
	"timerfd_gettime",
	"timerfd_settime",
	"times",
	"tkill",
	"truncate",
	"umask",
	"uname",
	"unlink",
	"unlinkat",
	"utime",
	"utimensat",
	"utimes",
	"vfork",
	"wait4",
	"waitid",
	"write",
	"writev",
}

// Refusal is a syscall that Docker's default profile allows and boxer
// refuses, with the reason.
type Refusal struct {
	Name string
	Why  string
}

// Refused lists what Docker's default profile allows (on x86-64 and arm64,
// some only on newer kernels) and boxer refuses. Allowed, Refused and
// Compat together are exactly Docker's allowlist: TestDockerPartition pins it.
var Refused = []Refusal{
	{"adjtimex", "clock tuning: no use in a sandbox, and a kernel surface"},
	{"clock_adjtime", "same"},
	{"epoll_ctl_old", "never implemented by Linux; reserved"},
	{"epoll_wait_old", "never implemented by Linux; reserved"},
	{"fanotify_mark", "filesystem-wide monitoring"},
	{"get_thread_area", "32-bit TLS; 64-bit programs use arch_prctl"},
	{"getxattrat", "kernel v6.13; nothing here needs it yet"},
	{"io_cancel", "legacy AIO: old attack surface, not needed by interpreters"},
	{"io_destroy", "legacy AIO"},
	{"io_getevents", "legacy AIO"},
	{"io_pgetevents", "legacy AIO"},
	{"io_setup", "legacy AIO"},
	{"io_submit", "legacy AIO"},
	{"ioprio_get", "I/O scheduling of other processes"},
	{"ioprio_set", "same"},
	{"listmount", "mount enumeration (kernel v6.8)"},
	{"listxattrat", "kernel v6.13; nothing here needs it yet"},
	{"map_shadow_stack", "kernel v6.6, CET shadow stacks; Debian 12's glibc does not use it"},
	{"memfd_secret", "secret memory hides pages from the host's view"},
	{"mseal", "not needed"},
	{"name_to_handle_at", "pairs with open_by_handle_at, the 'shocker' escape"},
	{"pkey_alloc", "memory protection keys: not needed"},
	{"pkey_free", "same"},
	{"pkey_mprotect", "same"},
	{"process_mrelease", "reaping other processes' memory"},
	{"process_vm_readv", "reading another process's memory"},
	{"process_vm_writev", "writing another process's memory"},
	{"ptrace", "tracing: the classic seccomp bypass on old kernels"},
	{"remap_file_pages", "deprecated, had CVEs"},
	{"removexattrat", "kernel v6.13; nothing here needs it yet"},
	{"set_thread_area", "32-bit TLS; 64-bit programs use arch_prctl"},
	{"setxattrat", "kernel v6.13; nothing here needs it yet"},
	{"statmount", "mount enumeration (kernel v6.8)"},
	{"uretprobe", "uprobes trampoline"},
	{"vmsplice", "had privilege escalation CVEs (CVE-2008-0600); pipes work without it"},
}

// Compat lists names in Docker's allowlist that are not syscalls of the
// native x86-64 or arm64 tables boxer allows (32-bit compat entries, time64
// variants, other architectures): there is nothing to allow or refuse.
var Compat = []string{
	"_llseek", "_newselect", "chown32", "clock_adjtime64", "clock_getres_time64",
	"clock_gettime64", "clock_nanosleep_time64", "fadvise64_64", "fchown32",
	"fcntl64", "fstat64", "fstatat64", "fstatfs64", "ftruncate64", "futex_time64",
	"getegid32", "geteuid32", "getgid32", "getgroups32", "getresgid32",
	"getresuid32", "getuid32", "io_pgetevents_time64", "ipc", "lchown32",
	"lstat64", "mmap2", "mq_timedreceive_time64", "mq_timedsend_time64",
	"ppoll_time64", "pselect6_time64", "recv", "recvmmsg_time64", "riscv_hwprobe",
	"rt_sigtimedwait_time64", "sched_rr_get_interval_time64", "semtimedop_time64",
	"send", "sendfile64", "setfsgid32", "setfsuid32", "setgid32", "setgroups32",
	"setregid32", "setresgid32", "setresuid32", "setreuid32", "setuid32",
	"sigprocmask", "sigreturn", "socketcall", "stat64", "statfs64",
	"timer_gettime64", "timer_settime64", "timerfd_gettime64", "timerfd_settime64",
	"truncate64", "ugetrlimit", "utimensat_time64", "waitpid",
}

// Denied lists syscalls that must never be allowed in any boxer profile: the
// escape and kernel-attack surface. Tests assert each of them fails with EPERM
// from inside a sandbox.
var Denied = []string{
	"acct",
	"add_key",
	"bpf",
	"chroot",
	"delete_module",
	"finit_module",
	"fsconfig",
	"fsmount",
	"fsopen",
	"fspick",
	"init_module",
	"io_uring_enter",
	"io_uring_register",
	"io_uring_setup",
	"kcmp",
	"kexec_file_load",
	"kexec_load",
	"keyctl",
	"lookup_dcookie",
	"modify_ldt",
	"mount",
	"mount_setattr",
	"move_mount",
	"open_by_handle_at",
	"open_tree",
	"perf_event_open",
	"pidfd_getfd",
	"pivot_root",
	"quotactl",
	"reboot",
	"request_key",
	"setdomainname",
	"sethostname",
	"setns",
	"settimeofday",
	"swapoff",
	"swapon",
	"syslog",
	"umount2",
	"unshare",
	"userfaultfd",
}

// nsFlags are the clone flags that create namespaces; clone with any of them
// is refused (unprivileged user namespaces would otherwise be reachable).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// DefaultProfile returns boxer's default-deny seccomp profile for the host's
// architecture: every syscall not allowed below fails with EPERM.
func DefaultProfile() *specs.LinuxSeccomp {
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	p := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		// Only the native architecture: 32-bit compat entry points (int 0x80,
		// x32) are another syscall table to get right, and nothing here needs them.
		Architectures: nativeArches(),
		Syscalls: []specs.LinuxSyscall{
			{Names: Allowed, Action: specs.ActAllow},
			// clone is how threads and processes are made; namespace flags are refused.
			{
				Names:  []string{"clone"},
				Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{
					{Index: cloneFlagsArg, Value: nsFlags, ValueTwo: 0, Op: specs.OpMaskedEqual},
				},
			},
			// clone3 passes its flags in memory that seccomp cannot inspect:
			// ENOSYS makes glibc fall back to clone, as Docker's profile does.
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
			// personality: only the values Docker allows (PER_LINUX, UNAME26,
			// PER_LINUX32, and the query 0xffffffff).
			personality(0x0),
			personality(0x0008),
			personality(0x20000),
			personality(0x20008),
			personality(0xffffffff),
			socket(unix.AF_UNIX),
			socket(unix.AF_INET),
			socket(unix.AF_INET6),
			// netlink answers getifaddrs and the like inside the empty netns.
			socket(unix.AF_NETLINK),
		},
	}
	p.Syscalls = append(p.Syscalls, archSyscalls()...)
	return p
}

func personality(v uint64) specs.LinuxSyscall {
	return specs.LinuxSyscall{
		Names:  []string{"personality"},
		Action: specs.ActAllow,
		Args:   []specs.LinuxSeccompArg{{Index: 0, Value: v, Op: specs.OpEqualTo}},
	}
}

func socket(domain uint64) specs.LinuxSyscall {
	return specs.LinuxSyscall{
		Names:  []string{"socket"},
		Action: specs.ActAllow,
		Args:   []specs.LinuxSeccompArg{{Index: 0, Value: domain, Op: specs.OpEqualTo}},
	}
}

func nativeArches() []specs.Arch {
	switch runtime.GOARCH {
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64}
	default:
		return []specs.Arch{specs.ArchX86_64}
	}
}

// cloneFlagsArg is the index of clone's flags argument: 0 everywhere boxer runs
// (s390 swaps the first two, and boxer does not support s390).
const cloneFlagsArg = 0

func archSyscalls() []specs.LinuxSyscall {
	switch runtime.GOARCH {
	case "amd64":
		// arch_prctl sets the TLS base register: every x86-64 program needs it.
		return []specs.LinuxSyscall{{Names: []string{"arch_prctl"}, Action: specs.ActAllow}}
	default:
		return nil
	}
}
