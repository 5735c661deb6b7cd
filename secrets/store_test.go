package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestNewStore(t *testing.T) {
	list := []Named{{"B", []byte("vb")}, {"A", []byte("va")}}
	s, err := NewStore(list)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	list[0].Value[0] = 'X' // the store holds its own copy
	if v, ok := s.Lookup("B"); !ok || string(v) != "vb" {
		t.Errorf("Lookup(B) = %q, %v; want %q, true", v, ok, "vb")
	}
	if v, ok := s.Lookup("C"); ok {
		t.Errorf("Lookup(C) = %q, true; want false", v)
	}
	if got := s.Names(); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Names = %q, want [A B]", got)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2", s.Len())
	}

	var nilStore *Store
	if _, ok := nilStore.Lookup("A"); ok || nilStore.Len() != 0 || nilStore.Names() != nil {
		t.Errorf("nil store is not empty")
	}
}

func TestNewStoreErrors(t *testing.T) {
	many := make([]Named, MaxSecrets+1)
	for i := range many {
		many[i] = Named{fmt.Sprintf("S%d", i), []byte("v")}
	}
	tests := []struct {
		name    string
		list    []Named
		wantErr string
	}{
		{name: "duplicate", list: []Named{{"A", []byte("1")}, {"A", []byte("2")}}, wantErr: "secret A is given twice: give each name once"},
		{name: "bad name", list: []Named{{"a b", []byte("1")}}, wantErr: `secret name "a b"`},
		{name: "empty value", list: []Named{{"A", nil}}, wantErr: "secret A: the value is empty"},
		{name: "too long", list: []Named{{"A", make([]byte, MaxValueBytes+1)}}, wantErr: "longer than 64 KiB"},
		{name: "too many", list: many, wantErr: "65 secrets: give at most 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStore(tc.list)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewStore = %v, %v; want an error containing %q", s, err, tc.wantErr)
			}
		})
	}
}

// TestNoValueInFormat checks that no fmt verb, log line or String of a type
// that holds values prints a value.
func TestNoValueInFormat(t *testing.T) {
	const value = "hunter2-VALUE"
	named := Named{"API_KEY", []byte(value)}
	spec, err := ParseSpec("API_KEY,env")
	if err != nil {
		t.Fatalf("ParseSpec: %v", err)
	}
	store, err := NewStore([]Named{named})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	masker := NewMasker(&bytes.Buffer{}, []Named{named})
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "named", named, "store", store)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "named", named, "store", store)

	outputs := map[string]string{
		"%v %+v":  fmt.Sprintf("%v %+v", named, spec),
		"named":   fmt.Sprintf("%v|%+v|%#v|%s|%q|%x|%X|%d|%v", named, named, named, named, named, named, named, named, []Named{named}),
		"store":   fmt.Sprintf("%v|%+v|%#v|%s|%x|%d|%v", store, store, store, store, store, store, *store),
		"masker":  fmt.Sprintf("%v|%+v|%#v|%s|%x|%d", masker, masker, masker, masker, masker, masker),
		"strings": named.String() + store.String() + masker.String(),
		"slog":    logged.String(),
	}
	forms := []string{value, hex.EncodeToString([]byte(value)), strings.ToUpper(hex.EncodeToString([]byte(value))),
		base64.StdEncoding.EncodeToString([]byte(value)), "104 117 110"}
	for what, out := range outputs {
		for _, f := range forms {
			if strings.Contains(out, f) {
				t.Errorf("%s prints the value (as %q): %s", what, f, out)
			}
		}
		if !strings.Contains(out, "API_KEY") {
			t.Errorf("%s does not name the secret: %s", what, out)
		}
	}
}
