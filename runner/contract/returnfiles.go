package contract

import (
	"mime"
	"net/http"
	"path"
	"path/filepath"
	"strings"
)

// Limits of Request.ReturnFiles (docs/http.md, "Files back").
const (
	// DefaultReturnBytes caps the content of the files a result carries.
	DefaultReturnBytes = 8 << 20
	// maxReturnPatterns bounds a request's globs.
	maxReturnPatterns = 32
	// MaxReturnFiles bounds the files a result lists.
	MaxReturnFiles = 1000
)

// ReturnedFile is a file of /workspace a result carries back: its content
// (base64 in JSON), unless it did not fit in what was left of the cap.
type ReturnedFile struct {
	// Path is relative to /workspace, with forward slashes.
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Content   []byte `json:"content,omitempty"`
	// Truncated: the file was larger than what the cap left, and its
	// content is not here.
	Truncated bool `json:"truncated,omitempty"`
}

// checkReturnFiles refuses globs that are not relative paths inside
// /workspace, or not globs.
func (r Request) checkReturnFiles() error {
	if len(r.ReturnFiles) > maxReturnPatterns {
		return FieldErr(FieldReturnFiles, "has %d patterns, more than %d", len(r.ReturnFiles), maxReturnPatterns)
	}
	for _, p := range r.ReturnFiles {
		if p == "" || !filepath.IsLocal(p) || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
			return FieldErr(FieldReturnFiles, "%q must be a glob relative to /workspace, like *.png or out/*.csv", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return FieldErr(FieldReturnFiles, "%q is not a glob: %v", p, err)
		}
	}
	if len(r.ReturnFiles) > 0 && r.ReturnBytes < 1 {
		return FieldErr(FieldReturnFiles, "needs a positive cap on the bytes returned")
	}
	return nil
}

// MatchesAny reports whether rel (slash-separated) matches one of the
// globs.
func MatchesAny(globs []string, rel string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, rel); ok {
			return true
		}
	}
	return false
}

// MediaType names a file's type by its extension, else by its first bytes.
func MediaType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(head)
}
