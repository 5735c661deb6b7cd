package templates

// A template's files: the SDK asks for an upload URL per copy step's files
// hash and PUTs a tar (gzipped or not) of the files there; package e2b
// serves the URL, authenticated by a one-use token in its path. What a
// key's uploads take at once is bounded (MaxUpload), and they are removed
// when the build ends. Unpacking keeps regular files, directories and
// symlinks (copied as links by the builder), beneath the build's context
// (os.Root), within a size bound.

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxer-dev/boxer/internal/quote"
)

// FileLink is E2B's TemplateBuildFileUpload for caller's template id:
// present when its build has the files of hash already, else the token
// of a URL to PUT them to.
func (ts *Store) FileLink(caller, id, hash string) (present bool, token string, err error) {
	t, err := ts.ownedOrError(caller, id)
	if err != nil {
		return false, "", err
	}
	if !filesHash.MatchString(hash) {
		return false, "", errorf(400, "hash: a copy's files hash is its SHA-256 (64 hexadecimal digits)")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, up := t.uploads[hash]; up {
		return true, "", nil
	}
	tok := newID("", 24)
	ts.tokens[tok] = upload{tmpl: t, hash: hash}
	return false, tok, nil
}

// Upload takes the files PUT to the upload URL of token, of size bytes
// if the request says (-1 if not), within what the key may still store.
func (ts *Store) Upload(token string, size int64, body io.Reader) error {
	ts.mu.Lock()
	u, ok := ts.tokens[token]
	delete(ts.tokens, token)
	var room int64
	if ok {
		room = ts.MaxUpload() - ts.used[u.tmpl.Owner]
	}
	ts.mu.Unlock()
	if !ok {
		return errorf(404, "no such upload URL: each is used once (ask GET /templates/{templateID}/files/{hash} again)")
	}
	if size > room {
		return errorf(413, "the template's files take %d bytes, and this key may store %d more (the server's bound for a key's uploads is %d MiB)", size, max(room, 0), ts.MaxUpload()>>20)
	}
	dir, err := ts.workDir()
	if err == nil {
		dir, err = os.MkdirTemp(dir, "upload-")
	}
	if err != nil {
		return err
	}
	p := filepath.Join(dir, u.hash)
	n, err := saveBounded(p, body, room)
	if err != nil {
		os.RemoveAll(dir)
		if errors.Is(err, errTooLarge) {
			return errorf(413, "the template's files take more than this key may store (the server's bound for a key's uploads is %d MiB)", ts.MaxUpload()>>20)
		}
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old, dup := u.tmpl.uploads[u.hash]; dup {
		// Two URLs for one hash, both used: the files are the same.
		if st, err := os.Stat(old); err == nil {
			ts.used[u.tmpl.Owner] -= st.Size()
		}
		os.RemoveAll(filepath.Dir(old))
	}
	u.tmpl.uploads[u.hash] = p
	ts.used[u.tmpl.Owner] += n
	return nil
}

var errTooLarge = errors.New("too large")

// saveBounded writes r to p, failing with errTooLarge past limit bytes.
func saveBounded(p string, r io.Reader, limit int64) (int64, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, io.LimitReader(r, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = errTooLarge
	}
	return n, err
}

// unpack unpacks the tar (gzipped or not) at p into dir, refusing more
// than limit bytes of files; it returns how many it wrote.
func unpack(p, dir string, limit int64) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return 0, err
		}
		defer gz.Close()
		in = gz
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var total int64
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return total, fmt.Errorf("%q leaves the template's directory", quote.Cut(h.Name))
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return total, err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return total, err
			}
		case tar.TypeReg:
			if h.Size > limit-total {
				return total, fmt.Errorf("the files unpack to more than %d MiB", maxUnpacked>>20)
			}
			out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return total, err
			}
			n, err := io.Copy(out, io.LimitReader(tr, h.Size))
			total += n
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return total, err
			}
		case tar.TypeSymlink:
			_ = root.Remove(name)
			if err := root.Symlink(h.Linkname, name); err != nil {
				return total, err
			}
		default:
			return total, fmt.Errorf("%q: only files, directories and symlinks are taken", quote.Cut(h.Name))
		}
	}
}
