package fakenet

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"time"
)

// packageTime stamps every file of the packages, so that they are the same
// bytes at every Start (zip cannot record a time before 1980).
var packageTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// WheelName is the file name of the wheel the index serves.
const WheelName = PyPIPackage + "-" + PyPIVersion + "-py3-none-any.whl"

// TarballName is the file name of the tarball the registry serves.
const TarballName = NPMPackage + "-" + NPMVersion + ".tgz"

// file is one member of a package archive.
type file struct {
	name string
	body string
}

// buildWheel makes a pure-Python wheel of PyPIPackage whose RECORD lists
// every other member with its hash and size.
func buildWheel() ([]byte, error) {
	info := PyPIPackage + "-" + PyPIVersion + ".dist-info/"
	files := []file{
		{PyPIPackage + "/__init__.py", "VALUE = 42\n"},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + PyPIPackage + "\nVersion: " + PyPIVersion + "\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: boxer-fakenet\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record bytes.Buffer
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	files = append(files, file{info + "RECORD", record.String()})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: packageTime})
		if err != nil {
			return nil, fmt.Errorf("adding %s to the wheel: %w", f.name, err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			return nil, fmt.Errorf("adding %s to the wheel: %w", f.name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("closing the wheel: %w", err)
	}
	return buf.Bytes(), nil
}

// buildTarball makes the npm tarball of NPMPackage: a gzipped tar whose
// members are under "package/".
func buildTarball() ([]byte, error) {
	manifest, err := json.MarshalIndent(map[string]string{
		"name":    NPMPackage,
		"version": NPMVersion,
		"main":    "index.js",
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []file{
		{"package/package.json", string(manifest) + "\n"},
		{"package/index.js", "module.exports = 42;\n"},
	}
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gw)
	for _, f := range files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.name,
			Mode:     0o644,
			Size:     int64(len(f.body)),
			ModTime:  packageTime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("adding %s to the tarball: %w", f.name, err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, fmt.Errorf("adding %s to the tarball: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the tarball: %w", err)
	}
	if err := gw.Close(); err != nil {
		return nil, fmt.Errorf("closing the tarball: %w", err)
	}
	return buf.Bytes(), nil
}

// pypiHandler serves a PEP 503 simple index holding the wheel; any other
// path gets the hello page.
func pypiHandler(wheel []byte) http.Handler {
	sum := sha256.Sum256(wheel)
	url := "https://" + PyPIName + "/packages/" + WheelName + "#sha256=" + hex.EncodeToString(sum[:])
	project := fmt.Sprintf("<!DOCTYPE html>\n<html>\n<head><title>Links for %s</title></head>\n<body>\n<h1>Links for %s</h1>\n<a href=\"%s\">%s</a><br/>\n</body>\n</html>\n",
		PyPIPackage, PyPIPackage, html.EscapeString(url), WheelName)
	root := fmt.Sprintf("<!DOCTYPE html>\n<html>\n<body>\n<a href=\"/simple/%s/\">%s</a><br/>\n</body>\n</html>\n",
		PyPIPackage, PyPIPackage)

	mux := http.NewServeMux()
	mux.HandleFunc("/", hello)
	mux.HandleFunc("GET /simple/{$}", serveBytes("text/html; charset=utf-8", []byte(root)))
	mux.HandleFunc("GET /simple/"+PyPIPackage+"/{$}", serveBytes("text/html; charset=utf-8", []byte(project)))
	mux.HandleFunc("GET /packages/"+WheelName, serveBytes("application/octet-stream", wheel))
	return mux
}

// npmHandler serves an npm registry holding the tarball; any other path
// gets the hello page.
func npmHandler(tarball []byte) (http.Handler, error) {
	sha := sha1.Sum(tarball)
	sha5 := sha512.Sum512(tarball)
	version := map[string]any{
		"name":    NPMPackage,
		"version": NPMVersion,
		"main":    "index.js",
		"_id":     NPMPackage + "@" + NPMVersion,
		"dist": map[string]string{
			"tarball":   "https://" + NPMName + "/" + NPMPackage + "/-/" + TarballName,
			"shasum":    hex.EncodeToString(sha[:]),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha5[:]),
		},
	}
	packument, err := json.Marshal(map[string]any{
		"_id":       NPMPackage,
		"name":      NPMPackage,
		"dist-tags": map[string]string{"latest": NPMVersion},
		"versions":  map[string]any{NPMVersion: version},
		"time": map[string]string{
			"created":  packageTime.Format(time.RFC3339),
			"modified": packageTime.Format(time.RFC3339),
			NPMVersion: packageTime.Format(time.RFC3339),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the packument: %w", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", hello)
	mux.HandleFunc("GET /"+NPMPackage, serveBytes("application/json", packument))
	mux.HandleFunc("GET /"+NPMPackage+"/-/"+TarballName, serveBytes("application/octet-stream", tarball))
	// npm install runs an audit unless told not to: answer "no advisories"
	// rather than the hello page, which npm cannot parse.
	mux.HandleFunc("POST /-/npm/v1/security/", serveBytes("application/json", []byte("{}")))
	return mux, nil
}

func serveBytes(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		http.ServeContent(w, r, "", packageTime, bytes.NewReader(body))
	}
}
