package e2b

// envd's plain HTTP for files: GET /files (the SDKs' files.read) and
// POST /files (files.write: multipart, or the raw bytes).

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/boxer-dev/boxer/runner"
)

// fileEntry is what POST /files answers for each file written.
type fileEntry struct {
	Path     string            `json:"path"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// filesRequest checks a /files request's user (its token or signature
// was checked on the way in); false when it answered the request itself.
func filesRequest(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	user, err := basicUser(r.Header)
	if err == nil && q.Has("username") {
		user = q.Get("username")
	}
	if err == nil {
		err = checkUser(user)
	}
	if err != nil {
		code := http.StatusUnauthorized
		if errors.Is(err, errNoRoot) {
			code = http.StatusForbidden
		}
		writeError(w, code, err.Error())
		return false
	}
	return true
}

// downloadFile answers a file's bytes, of at most the server's
// return_bytes.
func (s *Server) downloadFile(w http.ResponseWriter, r *http.Request) {
	if !filesRequest(w, r) {
		return
	}
	p, err := sandboxPath(r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	sb := sandboxFrom(r.Context())
	limit := s.cfg.Max.ReturnBytes
	if limit <= 0 {
		limit = runner.DefaultReturnBytes
	}
	data, err := s.runner.ReadSessionPath(r.Context(), sb.ID, sb.Caller, p, limit)
	if err != nil {
		writeFilesError(w, err)
		return
	}
	// The bytes as they are: sniffed, a file the code wrote would be
	// served as a page of this origin.
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// uploadFile writes the files of a multipart body (each part's file name
// its path, unless the query names one), or the raw body to the query's
// path, making the directories they lack.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	if !filesRequest(w, r) {
		return
	}
	sb := sandboxFrom(r.Context())
	q := r.URL.Query()
	// Checked before anything is written: a refused write writes nothing.
	md, err := fileMetadata(r.Header)
	if err != nil {
		writeFilesError(w, err)
		return
	}
	var out []fileEntry
	write := func(name string, body io.Reader) bool {
		p, err := sandboxPath(name)
		if err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return false
		}
		e, err := s.runner.WriteSessionPath(r.Context(), sb.ID, sb.Caller, p, body)
		if err == nil && len(md) > 0 {
			e, err = s.runner.SetSessionMetadata(r.Context(), sb.ID, sb.Caller, p, md)
		}
		if err != nil {
			writeFilesError(w, err)
			return false
		}
		out = append(out, fileEntry{Path: e.Path, Name: e.Name, Type: "file", Metadata: e.Metadata})
		return true
	}
	body := r.Body
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "the body is not gzip: "+err.Error())
			return
		}
		defer gz.Close()
		body = gz
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Content-Encoding %q: send the body as it is, or gzip", r.Header.Get("Content-Encoding")))
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		r.Body = body
		mr, err := r.MultipartReader()
		if err != nil {
			writeError(w, http.StatusBadRequest, "the body is not multipart/form-data: "+err.Error())
			return
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, "reading the multipart body: "+err.Error())
				return
			}
			if part.FormName() != "file" {
				part.Close()
				continue
			}
			// Not part.FileName(), which keeps the last element only:
			// the SDKs send a file's path as its part's file name.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			name := params["filename"]
			if q.Get("path") != "" {
				name = q.Get("path")
			}
			if name == "" {
				writeError(w, http.StatusBadRequest, "path: name the file's path in the query or as the part's file name")
				return
			}
			ok := write(name, part)
			part.Close()
			if !ok {
				return
			}
		}
	case "application/octet-stream":
		if q.Get("path") == "" {
			writeError(w, http.StatusBadRequest, "path is required with application/octet-stream: the file's path in the sandbox")
			return
		}
		if !write(q.Get("path"), body) {
			return
		}
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Content-Type %q: send multipart/form-data (a part named file) or application/octet-stream", mt))
		return
	}
	if len(out) == 0 {
		writeError(w, http.StatusBadRequest, "file: the multipart body has no part named file")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// fileMetadata is the metadata a write gives its files: the X-Metadata-KEY
// headers (a key lower-cased, a header's first value), as E2B's envd
// reads them.
func fileMetadata(h http.Header) (map[string]string, error) {
	var md map[string]string
	for name, vs := range h {
		key, ok := strings.CutPrefix(name, "X-Metadata-")
		if !ok || key == "" || len(vs) == 0 {
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[strings.ToLower(key)] = vs[0]
	}
	return md, runner.CheckFileMetadata(md)
}

// writeFilesError answers a runner error as envd's /files does.
func writeFilesError(w http.ResponseWriter, err error) {
	var fe *runner.FieldError
	var pe *runner.PathError
	var ended *runner.SessionEndedError
	switch {
	case errors.Is(err, runner.ErrFileNotFound):
		// A symlink leading out too: what it names is none of the sandbox's.
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &pe):
		// Not a regular file (a FIFO, a socket, a device), too long.
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, runner.ErrSessionFull):
		writeError(w, http.StatusInsufficientStorage, err.Error())
	case errors.Is(err, runner.ErrSessionNotFound), errors.As(err, &ended):
		writeError(w, http.StatusBadGateway, "the sandbox is not running: "+err.Error())
	case errors.Is(err, runner.ErrFileExists):
		writeError(w, http.StatusConflict, err.Error())
	case badPath(err):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &fe) && fe.Forbidden:
		writeError(w, http.StatusForbidden, err.Error())
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}
