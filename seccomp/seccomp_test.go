package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allowedDigest pins Allowed(): adding or removing a syscall changes it, and
// the change must update this digest and SECURITY.md's table on purpose.
const allowedDigest = "d1ddeb29c799b0c346e39d69386ac3db31ed7f6819f26c765b46a4928dfea7c3"

func TestAllowedPinned(t *testing.T) {
	sum := sha256.Sum256([]byte(strings.Join(Allowed(), "\n")))
	if got := hex.EncodeToString(sum[:]); got != allowedDigest {
		t.Errorf("the allowlist changed (digest %s): review the change, then update allowedDigest", got)
	}
}

func TestAllowedSortedAndUnique(t *testing.T) {
	// Alphabetised as moby's list is, with or without underscores.
	key := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	names := Allowed()
	for i := 1; i < len(names); i++ {
		if names[i-1] == names[i] {
			t.Errorf("%s listed twice", names[i])
		}
		if key(names[i-1]) > key(names[i]) && names[i-1] > names[i] {
			t.Errorf("%s before %s: keep the list alphabetised", names[i-1], names[i])
		}
	}
}

// TestListsAreCopies checks that an importer changing what an accessor
// returned changes neither the lists nor what the next call returns.
func TestListsAreCopies(t *testing.T) {
	tests := []struct {
		name string
		get  func() []string
	}{
		{"Allowed", Allowed},
		{"Denied", Denied},
		{"Compat", Compat},
		{"Refused", func() []string {
			var names []string
			for _, r := range Refused() {
				names = append(names, r.Name+": "+r.Why)
			}
			return names
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.get()
			got := tc.get()
			for i := range got {
				got[i] = "ptrace"
			}
			if again := tc.get(); !slices.Equal(again, want) {
				t.Errorf("%s() changed after its result was written to", tc.name)
			}
		})
	}
	r := Refused()
	r[0] = Refusal{Name: "read", Why: "changed"}
	if Refused()[0] == r[0] {
		t.Error("Refused() changed after its result was written to")
	}
}

func TestLoadDockerProfileDropsCapabilityRules(t *testing.T) {
	profile := `{
  "defaultAction": "SCMP_ACT_ERRNO",
  "syscalls": [
    {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
    {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["s390_pci_mmio_read"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["s390x"]}}
  ]
}`
	f := filepath.Join(t.TempDir(), "docker.json")
	if err := os.WriteFile(f, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Syscalls) != 1 || !slices.Equal(p.Syscalls[0].Names, []string{"read", "write"}) {
		t.Errorf("rules = %+v, want only read, write", p.Syscalls)
	}
	if len(p.Architectures) == 0 {
		t.Error("no architectures set")
	}
}

func TestLoadRefusesEmpty(t *testing.T) {
	f := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(f, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f); err == nil {
		t.Error("an empty profile was accepted")
	}
}

// dockerAllowed is the unconditional allowlist of Docker's default seccomp
// profile (moby/profiles, 2026), plus ptrace and process_vm_readv/writev,
// which Docker allows on kernels from 4.8. Names only: the reference boxer's
// profile is compared with.
var dockerAllowed = strings.Fields(`
accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir
chmod chown chown32 clock_adjtime clock_adjtime64 clock_getres
clock_getres_time64 clock_gettime clock_gettime64 clock_nanosleep
clock_nanosleep_time64 close close_range connect copy_file_range creat dup
dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait
epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat
exit exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate
fanotify_mark fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat
fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr
fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync ftruncate
ftruncate64 futex futex_requeue futex_time64 futex_wait futex_waitv
futex_wake futimesat getcpu getcwd getdents getdents64 getegid getegid32
geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer
getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid
getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage
getsid getsockname getsockopt get_thread_area gettid gettimeofday getuid
getuid32 getxattr getxattrat inotify_add_watch inotify_init inotify_init1
inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents
io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit ipc kill
landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown
lchown32 lgetxattr link linkat listen listmount listxattr listxattrat
llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise
map_shadow_stack membarrier memfd_create memfd_secret mincore mkdir mkdirat
mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect mq_getsetattr
mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend
mq_timedsend_time64 mq_unlink mremap mseal msgctl msgget msgrcv msgsnd
msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat
_newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe
pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl
pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64
pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recv
recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages removexattr
removexattrat rename renameat renameat2 restart_syscall riscv_hwprobe rmdir
rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo
sched_getaffinity sched_getattr sched_getparam sched_get_priority_max
sched_get_priority_min sched_getscheduler sched_rr_get_interval
sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam
sched_setscheduler sched_yield seccomp select semctl semget semop
semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg
sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups
setgroups32 setitimer setpgid setpriority setregid setregid32 setresgid
setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit
set_robust_list setsid setsockopt set_thread_area set_tid_address setuid
setuid32 setxattr setxattrat shmat shmctl shmdt shmget shutdown sigaltstack
signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat
stat64 statfs statfs64 statmount statx symlink symlinkat sync
sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete
timer_getoverrun timer_gettime timer_gettime64 timer_settime
timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64
timerfd_settime timerfd_settime64 times tkill truncate truncate64
ugetrlimit umask uname unlink unlinkat uretprobe utime utimensat
utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
process_vm_readv process_vm_writev ptrace
`)

// TestDockerPartition checks that Allowed, Refused and Compat are exactly
// Docker's allowlist, each name in one of them: boxer allows nothing Docker
// does not, and every difference is written down with its reason.
func TestDockerPartition(t *testing.T) {
	seen := map[string]string{}
	add := func(list string, names ...string) {
		for _, n := range names {
			if prev, ok := seen[n]; ok {
				t.Errorf("%s is in both %s and %s", n, prev, list)
			}
			seen[n] = list
		}
	}
	add("Allowed", Allowed()...)
	for _, r := range Refused() {
		if r.Why == "" {
			t.Errorf("%s is refused without a reason", r.Name)
		}
		add("Refused", r.Name)
	}
	add("Compat", Compat()...)
	docker := map[string]bool{}
	for _, n := range dockerAllowed {
		docker[n] = true
		if seen[n] == "" {
			t.Errorf("Docker allows %s: put it in Allowed, Refused (with why) or Compat", n)
		}
	}
	for n, list := range seen {
		if !docker[n] {
			t.Errorf("%s (in %s) is not in Docker's allowlist", n, list)
		}
	}
}
