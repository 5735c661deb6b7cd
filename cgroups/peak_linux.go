package cgroups

import (
	"os"
	"path/filepath"
	"strings"
)

// Peak measures a cgroup's peak memory from now on, where the kernel lets
// the peak be reset: cgroup v1's memory.max_usage_in_bytes (written 0), or
// cgroup v2's memory.peak, which since Linux 6.12 resets for the file
// descriptor it is written through. Elsewhere it is nil, and the cgroup's
// peak since it was made is all there is.
type Peak struct {
	file string
	f    *os.File
}

// WatchPeak resets the peak of the cgroup at path for the caller, or
// returns nil where that cannot be done.
func WatchPeak(m Mode, path string) *Peak {
	return watchPeakAt(m, Root, path)
}

func watchPeakAt(m Mode, root, path string) *Peak {
	switch m {
	case Unified:
		f, err := os.OpenFile(filepath.Join(root, path, "memory.peak"), os.O_RDWR, 0)
		if err != nil {
			return nil
		}
		if _, err := f.WriteString("reset\n"); err != nil {
			f.Close()
			return nil
		}
		return &Peak{f: f}
	case Legacy, Hybrid:
		file := filepath.Join(root, "memory", path, "memory.max_usage_in_bytes")
		if err := os.WriteFile(file, []byte("0"), 0); err != nil {
			return nil
		}
		return &Peak{file: file}
	}
	return nil
}

// Read returns the peak since WatchPeak and releases what it holds.
func (p *Peak) Read() (uint64, error) {
	if p.f != nil {
		defer p.f.Close()
		buf := make([]byte, 32)
		n, err := p.f.ReadAt(buf, 0)
		if n == 0 && err != nil {
			return 0, err
		}
		return parseUint(strings.TrimSpace(string(buf[:n])))
	}
	data, err := os.ReadFile(p.file)
	if err != nil {
		return 0, err
	}
	return parseSingle(data, p.file)
}
