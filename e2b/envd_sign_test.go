package e2b

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestFileSignature: the signature is the one E2B's SDKs make (vectors
// from SHA-256 computed apart from Go), and a signed /files request is
// taken for its one path, operation, user and sandbox, until it expires.
func TestFileSignature(t *testing.T) {
	exp := int64(1700000000)
	if got, want := fileSignature("hello.txt", "read", "", "tok", &exp), "v1_EUu2ENlqKPzOY/NaOk0BqXuM7BkFsPEMrnoTb0VpeXc"; got != want {
		t.Errorf("with expiration: %s, want %s", got, want)
	}
	if got, want := fileSignature("hello.txt", "write", "user", "tok", nil), "v1_Ii5xwI7WcUNK/I7CN7c8cpWsQ9+bbgHgtGtPNHcNO+Q"; got != want {
		t.Errorf("without: %s, want %s", got, want)
	}

	sb := &sandbox{EnvdToken: "tok"}
	now := time.Unix(exp-10, 0)
	req := func(method string, q url.Values) *http.Request {
		return httptest.NewRequest(method, "/files?"+q.Encode(), nil)
	}
	signed := func(path, op, user string, exp *int64) url.Values {
		q := url.Values{"path": {path}, "signature": {fileSignature(path, op, user, "tok", exp)}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != nil {
			q.Set("signature_expiration", strconv.FormatInt(*exp, 10))
		}
		return q
	}
	later := exp + 60
	for _, c := range []struct {
		name   string
		method string
		q      url.Values
		want   string
	}{
		{"a read", "GET", signed("hello.txt", "read", "", &exp), ""},
		{"a write, no expiration, a user", "POST", signed("up.txt", "write", "user", nil), ""},
		{"a read signature used to write", "POST", signed("hello.txt", "read", "", &exp), "invalid signature"},
		{"another path", "GET", with(signed("hello.txt", "read", "", &exp), "path", "other.txt"), "invalid signature"},
		{"another user", "GET", with(signed("hello.txt", "read", "", &exp), "username", "root"), "invalid signature"},
		{"a longer life", "GET", with(signed("hello.txt", "read", "", &exp), "signature_expiration", strconv.FormatInt(later, 10)), "invalid signature"},
		{"no expiration where it had one", "GET", without(signed("hello.txt", "read", "", &exp), "signature_expiration"), "invalid signature"},
		{"a forged signature, expired too", "GET", with(signed("hello.txt", "read", "", &exp), "signature", "v1_forged"), "invalid signature"},
		{"an expiration not a number", "GET", with(signed("hello.txt", "read", "", &exp), "signature_expiration", "soon"), "signature_expiration must be a Unix time in seconds"},
	} {
		err := sb.checkSignature(req(c.method, c.q), now)
		if got := errText(err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	past := exp - 20
	if err := sb.checkSignature(req("GET", signed("hello.txt", "read", "", &past)), now); errText(err) != "signature is already expired" {
		t.Errorf("expired: %v", err)
	}
	other := &sandbox{EnvdToken: "other"}
	if err := other.checkSignature(req("GET", signed("hello.txt", "read", "", &exp)), now); errText(err) != "invalid signature" {
		t.Errorf("another sandbox's: %v", err)
	}
	if err := (&sandbox{}).checkSignature(req("GET", url.Values{"path": {"x"}, "signature": {fileSignature("x", "read", "", "", nil)}}), now); errText(err) != "invalid signature" {
		t.Errorf("a sandbox without a token: %v", err)
	}

	// Only envd's /files, read or written, without a token, is signed.
	for _, c := range []struct {
		r    *http.Request
		want bool
	}{
		{httptest.NewRequest("GET", "/files?signature=x", nil), true},
		{httptest.NewRequest("POST", "/files?signature=x", nil), true},
		{httptest.NewRequest("PUT", "/files?signature=x", nil), false},
		{httptest.NewRequest("GET", "/health?signature=x", nil), false},
		{httptest.NewRequest("GET", "/files?path=x", nil), false},
		{withHeader(httptest.NewRequest("GET", "/files?signature=x", nil), headerAccessToken, "tok"), false},
	} {
		if got := signedFiles(c.r); got != c.want {
			t.Errorf("signedFiles(%s %s, token %q) = %v", c.r.Method, c.r.URL, c.r.Header.Get(headerAccessToken), got)
		}
	}
}

// with is q with key set to v; without, with key removed.
func with(q url.Values, key, v string) url.Values {
	q.Set(key, v)
	return q
}

func without(q url.Values, key string) url.Values {
	q.Del(key)
	return q
}

func withHeader(r *http.Request, key, v string) *http.Request {
	r.Header.Set(key, v)
	return r
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
