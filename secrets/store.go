package secrets

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// Named is a loaded secret.
type Named struct {
	Name  string
	Value []byte
}

// String returns "secret NAME", never the value.
func (n Named) String() string { return "secret " + n.Name }

// Format prints n as String does, whatever the verb (%v, %+v, %#v, %x, %d
// would otherwise print the value's bytes).
func (n Named) Format(f fmt.State, verb rune) { io.WriteString(f, n.String()) }

// LogValue logs n as String does.
func (n Named) LogValue() slog.Value { return slog.StringValue(n.String()) }

// Store holds secrets by name. It does not change once made, so concurrent
// reads are safe. A nil *Store is an empty store.
type Store struct {
	values map[string][]byte
	names  []string // sorted
}

// NewStore makes a store of list, copying the values. Each name must be
// valid and given once, each value not empty and at most MaxValueBytes,
// and there may be at most MaxSecrets.
func NewStore(list []Named) (*Store, error) {
	if len(list) > MaxSecrets {
		return nil, fmt.Errorf("%d secrets: give at most %d", len(list), MaxSecrets)
	}
	s := &Store{values: make(map[string][]byte, len(list))}
	for _, n := range list {
		if err := CheckName(n.Name); err != nil {
			return nil, err
		}
		if _, dup := s.values[n.Name]; dup {
			return nil, fmt.Errorf("secret %s is given twice: give each name once", n.Name)
		}
		if err := checkValue(n.Value); err != nil {
			return nil, fmt.Errorf("secret %s: %w", n.Name, err)
		}
		s.values[n.Name] = bytes.Clone(n.Value)
		s.names = append(s.names, n.Name)
	}
	slices.Sort(s.names)
	return s, nil
}

// Lookup returns the value of the secret name. The caller must not modify
// it.
func (s *Store) Lookup(name string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	v, ok := s.values[name]
	return v, ok
}

// Names returns the names of the secrets, sorted.
func (s *Store) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// Len returns the number of secrets.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// String returns the names of the secrets, never their values.
func (s *Store) String() string {
	if s.Len() == 0 {
		return "no secrets"
	}
	return "secrets " + strings.Join(s.names, ", ")
}

// Format prints s as String does, whatever the verb. Its receiver is a
// value so that a dereferenced Store prints its names only too.
func (s Store) Format(f fmt.State, verb rune) { io.WriteString(f, s.String()) }

// LogValue logs s as String does.
func (s *Store) LogValue() slog.Value { return slog.StringValue(s.String()) }
