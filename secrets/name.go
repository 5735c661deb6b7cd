package secrets

import (
	"fmt"
	"strconv"
)

// MaxValueBytes is the most a secret's value may hold. Secrets are keys,
// tokens and passwords; the cap keeps a mistaken path (a log, an image) from
// being read whole into memory and into every header it is injected into.
const MaxValueBytes = 64 << 10

// MaxSecrets is the most secrets a Store holds.
const MaxSecrets = 64

// maxNameLen is the longest secret name.
const maxNameLen = 128

// nameRule says what a secret name may hold, for messages.
const nameRule = "use letters, digits and _, not starting with a digit"

// valueLimitText is MaxValueBytes for messages.
var valueLimitText = strconv.Itoa(MaxValueBytes>>10) + " KiB"

// CheckName reports what is wrong with a secret name. A name is 1 to 128
// ASCII letters, digits and _, not starting with a digit, so that it is
// also a shell variable's name and a safe file name.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty secret name: give a name such as API_KEY")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("secret name %q… is %d characters long: use at most %d", name[:16], len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i], i == 0) {
			return fmt.Errorf("secret name %q: %s", name, nameRule)
		}
	}
	return nil
}

// isNameByte reports whether c may appear in a secret name; first says
// whether it is the name's first byte, which may not be a digit.
func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9':
		return !first
	}
	return false
}
