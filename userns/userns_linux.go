package userns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	hostlease "github.com/boxer-dev/boxer/internal/lease"
	"golang.org/x/sys/unix"
)

// LeaseDir holds the id blocks leased by every boxer on the host.
const LeaseDir = "/run/boxer/userns"

// ErrFull is the answer of Make when every block of the range is held.
var ErrFull = errors.New("every block of boxer's user id range is held")

// Options are the operator's settings of the sandboxes' namespaces.
type Options struct {
	// Dir holds the leases: LeaseDir unless a test says otherwise.
	Dir string
	// Range is the host ids the blocks are taken from.
	Range Range
	// Wrap is boxer-wrap, and Hold and HoldNet its files that make the
	// namespace (HoldNet: with a network namespace) in place of
	// util-linux's unshare and a shell: "unshare" and "hold ready"
	// (init/boxer-wrap.c). Run as the block's first id, it unshares,
	// writes a newline and waits for the end of its stdin. Both files
	// reach it as descriptors boxer opened, so that the block's id needs
	// no access to their directories.
	Wrap, Hold, HoldNet string
}

// NS is one sandbox's user namespace, mapping ids 0-65535 inside onto a
// block of the host's, alive while bound at Path.
type NS struct {
	// Path is the namespace's bind mount, which the runtime joins.
	Path string
	// Base is the host id of uid and gid 0 inside: id n inside is Base+n
	// on the host.
	Base uint32
	dir  hostlease.Dir
	n    int
	gone bool
}

// Make leases a block for the sandbox whose run directory is runDir (the
// lease names it: Sweep returns a block whose run directory is gone) and
// makes its namespace, bound at path; with netPath, a network namespace
// too, owned by it and bound there. On error nothing is left.
func Make(o Options, runDir, path, netPath string) (ns *NS, err error) {
	dir := hostlease.Dir(o.Dir)
	n, err := dir.Take(o.Range.firstBlock(), o.Range.Blocks(), runDir)
	if errors.Is(err, hostlease.ErrFull) {
		return nil, fmt.Errorf("%w (%s, %d sandboxes)", ErrFull, o.Range, o.Range.Blocks())
	}
	if err != nil {
		return nil, err
	}
	ns = &NS{Path: path, Base: uint32(n) * Size, dir: dir, n: n}
	if err := create(o, path, netPath, ns.Base); err != nil {
		return nil, errors.Join(err, ns.Remove())
	}
	return ns, nil
}

// Remove unbinds the namespace (the kernel frees it once no process is
// in it) and returns its block. It is idempotent.
func (ns *NS) Remove() error {
	if ns.gone {
		return nil
	}
	if err := unbind(ns.Path); err != nil {
		return err
	}
	ns.gone = true
	return ns.dir.Release(ns.n)
}

func mapping(base uint32) string {
	return "0 " + strconv.FormatUint(uint64(base), 10) + " " + strconv.Itoa(Size) + "\n"
}

// create makes a namespace owned by base, the block's first id, and binds
// it at path. The kernel charges a namespace's processes' counters
// (inotify instances, pending signals, message queues) to each ancestor
// namespace's owner: a namespace root made would share them with every
// other sandbox and root's own. Go cannot unshare a user namespace after
// setuid in a child it forks, so the child is o's holder (or util-linux's
// unshare and a shell), run as base; it reports that the namespace exists,
// and waits while boxer writes the maps and binds it.
func create(o Options, path, netPath string, base uint32) error {
	for _, p := range []string{path, netPath} {
		if p == "" {
			continue
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
		if err != nil {
			return fmt.Errorf("creating namespace file: %w", err)
		}
		f.Close()
	}
	cmd, files, err := holder(o, netPath != "")
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		os.Remove(path)
		if netPath != "" {
			os.Remove(netPath)
		}
		return err
	}
	cmd.Dir, cmd.Env = "/", []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: base, Gid: base, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		var out *bufio.Reader
		if p, perr := cmd.StdoutPipe(); perr != nil {
			err = perr
		} else {
			out = bufio.NewReader(p)
		}
		if err == nil {
			err = cmd.Start()
		}
		if err == nil {
			if _, rerr := out.ReadString('\n'); rerr != nil {
				err = fmt.Errorf("unshare ended before its namespace was made (user namespaces may be off: see 'boxer doctor')")
			} else {
				err = bindNew(cmd.Process.Pid, base, path, netPath)
			}
			stdin.Close()
			if werr := cmd.Wait(); err == nil && werr != nil {
				err = fmt.Errorf("unshare: %w", werr)
			}
		}
	}
	if err != nil {
		unbind(path)
		if netPath != "" {
			unbind(netPath)
		}
		return fmt.Errorf("making the sandbox's user namespace: %w", err)
	}
	return nil
}

// bindNew maps the namespace of process pid onto base's block and binds
// it at path.
func bindNew(pid int, base uint32, path, netPath string) error {
	proc := "/proc/" + strconv.Itoa(pid)
	for _, m := range []string{"uid_map", "gid_map"} {
		if err := os.WriteFile(proc+"/"+m, []byte(mapping(base)), 0); err != nil {
			return fmt.Errorf("writing %s: %w", m, err)
		}
	}
	if err := unix.Mount(proc+"/ns/user", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding user namespace: %w", err)
	}
	if netPath != "" {
		if err := unix.Mount(proc+"/ns/net", netPath, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding network namespace: %w", err)
		}
	}
	return nil
}

// unbind undoes create's bind mount and removes its file.
func unbind(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting user namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing user namespace file: %w", err)
	}
	return nil
}

// holder is the command that makes and holds a namespace (see create),
// with the files it is given, for the caller to close.
func holder(o Options, net bool) (*exec.Cmd, []*os.File, error) {
	hold := o.Hold
	if net {
		hold = o.HoldNet
	}
	if o.Wrap != "" && hold != "" {
		var files []*os.File
		for _, p := range []string{o.Wrap, hold} {
			f, err := os.Open(p)
			if err != nil {
				return nil, files, err
			}
			files = append(files, f)
		}
		// The child's descriptors 3 and 4 (ExtraFiles): the program and
		// its file, each reached through its /proc/self/fd link.
		cmd := exec.Command("/proc/self/fd/3", "/proc/self/fd/4")
		cmd.ExtraFiles = files
		return cmd, files, nil
	}
	args := []string{"--user"}
	if net {
		args = append(args, "--net")
	}
	bin, err := unshareBinary()
	if err != nil {
		return nil, nil, err
	}
	return exec.Command(bin, append(args, "--", "/bin/sh", "-c", "echo && read -r _ || :")...), nil, nil
}

// unshareBinary finds util-linux's unshare.
func unshareBinary() (string, error) {
	p, err := exec.LookPath("unshare")
	if err != nil {
		return "", fmt.Errorf("util-linux's unshare is not installed (it makes the sandboxes' user namespaces): install util-linux, or run with --userns=host")
	}
	return p, nil
}

// Sweep returns the blocks of sandboxes whose run directory is gone (the
// reaper's last step: it has removed the run directories of dead boxer
// processes, and with them the namespaces' bind mounts).
func Sweep(dir string) error {
	return releaseWhere(dir, hostlease.Orphaned)
}

// Owner is the host uid that owns the user namespace bound or linked at
// path (ioctl NS_GET_OWNER_UID): for doctor and tests.
func Owner(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return unix.IoctlGetUint32(int(f.Fd()), unix.NS_GET_OWNER_UID)
}

// Release returns the blocks held by the sandbox whose run directory is
// holder: once its processes and its namespace's bind mount are gone, on
// every teardown, whichever process made it.
func Release(dir, holder string) error {
	return releaseWhere(dir, func(h string) bool { return h == holder })
}

// releaseWhere returns every block of dir whose holder gone says is gone.
func releaseWhere(dir string, gone func(holder string) bool) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	d := hostlease.Dir(dir)
	return d.Locked(func() error {
		held, err := d.Held()
		if err != nil {
			return err
		}
		var errs []error
		for n, h := range held {
			if gone(h) {
				errs = append(errs, d.Release(n))
			}
		}
		return errors.Join(errs...)
	})
}

// Probe makes and removes a namespace of o's range, as a sandbox's is
// made, and mounts an idmapped root through it, as a sandbox's is
// mounted, on the filesystem of dir (where the images' layers are; ""
// for the temporary directory); it says what it found: for 'boxer
// doctor'. An idmapped root that fails is ErrNoIDMap.
func Probe(o Options, dir string) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		dir = ""
	}
	dir, err := os.MkdirTemp(dir, "boxer-userns-probe-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ns, err := Make(o, dir, dir+"/userns", "")
	if err != nil {
		return "", err
	}
	owner, err := Owner(ns.Path)
	if err == nil && owner != ns.Base {
		err = fmt.Errorf("the namespace's owner is %d, not %d", owner, ns.Base)
	}
	if err == nil {
		err = probeIDMapped(ns.Path, ns.Base, dir)
	}
	err = errors.Join(err, ns.Remove())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("a namespace each, from host ids %s (%d sandboxes at once), and an idmapped root", o.Range, o.Range.Blocks()), nil
}
