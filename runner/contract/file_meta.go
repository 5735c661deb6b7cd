package contract

// E2B's file metadata: string pairs kept on a regular file as its
// extended attributes user.e2b.KEY.

import "strings"

// Bounds of what metadata a file is given, and of what is read back of
// what the sandbox set.
const (
	MaxMetaKeys     = 64
	MaxMetaKeyLen   = 128
	MaxMetaValueLen = 4096
)

// CheckFileMetadata refuses metadata a file cannot be given: keys are HTTP
// header tokens (they travel as X-Metadata-KEY headers) of at most
// MaxMetaKeyLen bytes, values printable ASCII of at most MaxMetaValueLen.
func CheckFileMetadata(md map[string]string) error {
	if len(md) > MaxMetaKeys {
		return FieldErr("metadata", "%d keys: a file takes at most %d", len(md), MaxMetaKeys)
	}
	for k, v := range md {
		if k == "" || len(k) > MaxMetaKeyLen || !isToken(k) {
			return FieldErr("metadata", "key %s: a key is 1 to %d letters, digits or !#$%%&'*+-.^_`|~", CutPath(k), MaxMetaKeyLen)
		}
		if len(v) > MaxMetaValueLen || !isPrintable(v) {
			return FieldErr("metadata", "the value of %s: at most %d printable ASCII characters", k, MaxMetaValueLen)
		}
	}
	return nil
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
