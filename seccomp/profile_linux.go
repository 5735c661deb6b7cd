package seccomp

import (
	"runtime"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// nsFlags are the clone flags that create namespaces; clone with any of them
// is refused (unprivileged user namespaces would otherwise be reachable).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// DefaultProfile returns boxer's default-deny seccomp profile for the host's
// architecture: every syscall not allowed below fails with EPERM. Each call
// builds a new profile, which the caller may change.
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
			{Names: slices.Clone(allowed), Action: specs.ActAllow},
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

// GVisorProfile is DefaultProfile as runsc applies it (--oci-seccomp):
// gVisor turns every errno rule into EPERM, and glibc's pthread_create
// falls back from clone3 to clone only on ENOSYS, so the clone3 rule would
// leave no thread creatable. Under runsc clone3 is allowed instead: gVisor
// implements it in its own kernel, where the namespaces its flags may ask
// for are the Sentry's, not the host's.
func GVisorProfile() *specs.LinuxSeccomp {
	p := DefaultProfile()
	for i, sc := range p.Syscalls {
		if slices.Equal(sc.Names, []string{"clone3"}) {
			p.Syscalls[i] = specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActAllow}
		}
	}
	return p
}
