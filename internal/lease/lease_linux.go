// Package lease hands out numbered leases that every boxer process on the
// host shares: one file per lease under a directory, named by its number
// and naming its holder's run directory, written under an exclusive lock
// so that concurrent boxer processes, whatever their state directory,
// never hold the same number. The egress links' addresses and the user
// namespaces' id ranges are leased this way.
package lease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrFull is Take's answer when every number is held.
var ErrFull = errors.New("every lease is held")

// Dir is a directory of leases.
type Dir string

// File is the file of lease n.
func (d Dir) File(n int) string { return filepath.Join(string(d), strconv.Itoa(n)) }

// Take writes the lowest free lease of the count from first on for holder
// (a run directory) and returns its number; ErrFull when there is none.
func (d Dir) Take(first, count int, holder string) (int, error) {
	n := -1
	err := d.Locked(func() error {
		held, err := d.numbers()
		if err != nil {
			return err
		}
		for i := first; i < first+count; i++ {
			if held[i] {
				continue
			}
			n = i
			return os.WriteFile(d.File(i), []byte(holder), 0o600)
		}
		return ErrFull
	})
	return n, err
}

// Release removes lease n; a lease already gone is no error.
func (d Dir) Release(n int) error {
	if err := os.Remove(d.File(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("releasing lease %d of %s: %w", n, d, err)
	}
	return nil
}

// Held reads the held leases: number to holder. Under Locked, it is the
// truth; outside, a glance.
func (d Dir) Held() (map[int]string, error) {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return nil, fmt.Errorf("reading leases in %s: %w", d, err)
	}
	held := map[int]string{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		holder, _ := os.ReadFile(filepath.Join(string(d), e.Name()))
		held[n] = strings.TrimSpace(string(holder))
	}
	return held, nil
}

// numbers reads which leases are held, without their holders.
func (d Dir) numbers() (map[int]bool, error) {
	f, err := os.Open(string(d))
	if err != nil {
		return nil, fmt.Errorf("reading leases in %s: %w", d, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("reading leases in %s: %w", d, err)
	}
	held := make(map[int]bool, len(names))
	for _, name := range names {
		if n, err := strconv.Atoi(name); err == nil {
			held[n] = true
		}
	}
	return held, nil
}

// Orphaned says whether holder's run directory is gone: its lease is
// left over (the reaper removes the run directories of dead boxer
// processes).
func Orphaned(holder string) bool {
	if !filepath.IsAbs(holder) {
		return false
	}
	_, err := os.Stat(holder)
	return errors.Is(err, os.ErrNotExist)
}

// Locked runs fn holding the directory's lock file exclusively (creating
// the directory). fn must not call Take.
func (d Dir) Locked(fn func() error) error {
	// Its parent (boxer's state directory) stays searchable by others:
	// sandboxes in user namespaces of their own walk through it.
	if err := os.MkdirAll(filepath.Dir(string(d)), 0o711); err != nil {
		return fmt.Errorf("creating %s: %w", d, err)
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", d, err)
	}
	f, err := os.OpenFile(filepath.Join(string(d), ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("opening lease lock: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking leases: %w", err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}
