package sessionfs

// A file's metadata: string pairs kept as extended attributes user.e2b.KEY
// on the file itself, as E2B's envd keeps them (the sandbox's code may set
// and read them too). Only regular files carry metadata here.

import (
	"bytes"
	"errors"
	"os"

	"github.com/boxer-dev/boxer/runner/contract"
	box "github.com/boxer-dev/boxer/runner/sandbox"
	"golang.org/x/sys/unix"
)

// xattrListMax is the kernel's bound on a file's list of attribute
// names (XATTR_LIST_MAX).
const xattrListMax = 65536

// metaPrefix names the extended attributes that are a file's metadata.
const metaPrefix = "user.e2b."

// SetMeta replaces the metadata of the regular file at p with md (none:
// the file keeps none) and describes the file.
func (f *Files) SetMeta(p Path, md map[string]string) (contract.FileEntry, error) {
	if err := contract.CheckFileMetadata(md); err != nil {
		return contract.FileEntry{}, err
	}
	var e contract.FileEntry
	err := f.op(p, func(root *os.Root) error {
		fl, err := box.OpenRegular(root, contract.FieldPath, p.Rel, p.Abs, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer fl.Close()
		fd := int(fl.Fd())
		if err := clearMeta(fd); err != nil {
			return metaErr(p, err)
		}
		for k, v := range md {
			if err := unix.Fsetxattr(fd, metaPrefix+k, []byte(v), 0); err != nil {
				return metaErr(p, err)
			}
		}
		e, err = f.entry(root, p)
		return err
	})
	return e, err
}

// metaErr says why a file's metadata could not be set.
func metaErr(p Path, err error) error {
	switch {
	case errors.Is(err, unix.ENOTSUP):
		return contract.FieldErr("metadata", "%s: its file system keeps no extended attributes (tmpfs does from Linux 6.6)", contract.CutPath(p.Abs))
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.E2BIG), errors.Is(err, unix.ERANGE):
		return contract.FieldErr("metadata", "%s: more metadata than its file system keeps for a file", contract.CutPath(p.Abs))
	}
	return err
}

// clearMeta removes the metadata of the file open as fd.
func clearMeta(fd int) error {
	names, err := metaNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := unix.Fremovexattr(fd, n); err != nil && !errors.Is(err, unix.ENODATA) {
			return err
		}
	}
	return nil
}

// metaNames lists the file's metadata attributes (names with metaPrefix).
func metaNames(fd int) ([]string, error) {
	n, err := unix.Flistxattr(fd, nil)
	if errors.Is(err, unix.ENOTSUP) || err == nil && n == 0 {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	buf := make([]byte, min(n, xattrListMax))
	if n, err = unix.Flistxattr(fd, buf); err != nil {
		return nil, err
	}
	var names []string
	for _, name := range bytes.Split(buf[:n], []byte{0}) {
		if bytes.HasPrefix(name, []byte(metaPrefix)) && len(name) > len(metaPrefix) {
			names = append(names, string(name))
		}
	}
	return names, nil
}

// readMeta reads the metadata of the regular file rel of root, nil when
// it has none or cannot be opened as one; at most contract.MaxMetaKeys pairs, and
// no value over contract.MaxMetaValueLen (what the sandbox set beyond is left
// out).
func readMeta(root *os.Root, p Path) map[string]string {
	fl, err := box.OpenRegular(root, contract.FieldPath, p.Rel, p.Abs, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer fl.Close()
	fd := int(fl.Fd())
	names, err := metaNames(fd)
	if err != nil || len(names) == 0 {
		return nil
	}
	md := map[string]string{}
	val := make([]byte, contract.MaxMetaValueLen)
	for _, n := range names {
		if len(md) == contract.MaxMetaKeys {
			break
		}
		sz, err := unix.Fgetxattr(fd, n, val)
		if err != nil {
			continue // gone meanwhile, or longer than a value may be
		}
		md[n[len(metaPrefix):]] = string(val[:sz])
	}
	if len(md) == 0 {
		return nil
	}
	return md
}
