package e2b

// E2B's signed file URLs: Sandbox.downloadUrl and uploadUrl give a URL of
// envd's /files that a client without the access token (a browser, curl)
// may use for one path, one operation and one user, until its expiration
// if it has one. The signature is the SDKs': "v1_" and the unpadded
// base64 of SHA-256 over path:operation:user:token[:expiration].

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// fileSignature is the signature E2B's SDKs make for a /files URL.
func fileSignature(path, operation, user, token string, expiration *int64) string {
	parts := []string{path, operation, user, token}
	if expiration != nil {
		parts = append(parts, strconv.FormatInt(*expiration, 10))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, ":")))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

// signedFiles reports whether r asks for envd's /files by a signature
// rather than the access token: a read (GET) or a write (POST), with a
// signature and no X-Access-Token.
func signedFiles(r *http.Request) bool {
	return r.URL.Path == "/files" && (r.Method == http.MethodGet || r.Method == http.MethodPost) &&
		r.Header.Get(headerAccessToken) == "" && r.URL.Query().Has("signature")
}

// checkSignature checks a signed /files request against the sandbox's
// access token, as E2B's envd: the signature first, so that a forger
// never learns whether an expiration was the problem, then its
// expiration.
func (sb *sandbox) checkSignature(r *http.Request, now time.Time) error {
	q := r.URL.Query()
	operation := "read"
	if r.Method == http.MethodPost {
		operation = "write"
	}
	var expiration *int64
	if v := q.Get("signature_expiration"); q.Has("signature_expiration") {
		exp, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("signature_expiration must be a Unix time in seconds")
		}
		expiration = &exp
	}
	want := fileSignature(q.Get("path"), operation, q.Get("username"), sb.EnvdToken, expiration)
	if sb.EnvdToken == "" || subtle.ConstantTimeCompare([]byte(q.Get("signature")), []byte(want)) != 1 {
		return errors.New("invalid signature")
	}
	if expiration != nil && *expiration < now.Unix() {
		return errors.New("signature is already expired")
	}
	return nil
}
