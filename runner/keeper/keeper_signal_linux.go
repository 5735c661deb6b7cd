package keeper

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/boxer-dev/boxer/runner/contract"
	"golang.org/x/sys/unix"
)

// signalFromHost sends sig to p's boxer-init on runc, where it is a host
// process: SIGKILL to its whole process group (boxer-init leads it, and
// cannot pass a SIGKILL on), any other signal to boxer-init, which passes
// it on to the program. Sent from the host, it needs no process in the
// sandbox, so it reaches a process whose sandbox has no pids left (a fork
// bomb), which an exec of boxer-init -k could not.
//
// The PID is the shim's word: it is taken through a pidfd, and believed
// only while that pidfd's process is alive and in the sandbox's PID
// namespace, so that a PID reused after p's end is never signalled.
func (k *keeper) signalFromHost(p *keptProcess, info contract.ProcessInfo, sig unix.Signal) error {
	pid := int(p.process.Pid())
	if pid <= 0 {
		return fmt.Errorf("process %d has no PID yet: try again", info.ID)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return signalGone(info, err)
	}
	defer unix.Close(fd)
	same, err := samePidNS(pid, int(k.task.Pid()))
	if err != nil || !same {
		return signalGone(info, err)
	}
	// Alive after the namespace was read: that was its namespace.
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		return signalGone(info, err)
	}
	if sig != unix.SIGKILL {
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
			return signalGone(info, err)
		}
		return nil
	}
	err = unix.PidfdSendSignal(fd, sig, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.9: the group's ID is its living leader's PID.
		err = unix.Kill(-pid, sig)
	}
	if err != nil {
		return signalGone(info, err)
	}
	return nil
}

// samePidNS says whether processes a and b are in one PID namespace.
func samePidNS(a, b int) (bool, error) {
	if b <= 0 {
		return false, errors.New("the session's PID 1 is not known")
	}
	var sa, sb unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(a)+"/ns/pid", &sa); err != nil {
		return false, err
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(b)+"/ns/pid", &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// signalGone is the answer when p's process could not be found to
// signal, or the signal found it gone: it has ended, or is ending.
func signalGone(info contract.ProcessInfo, err error) error {
	if err == nil || errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrNotExist) {
		return contract.FieldErr(contract.FieldSignal, "cannot be sent: process %d has ended", info.ID)
	}
	return fmt.Errorf("signalling process %d: %w", info.ID, err)
}
