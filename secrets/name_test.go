package secrets

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // "" when the name is valid
	}{
		{name: "upper", in: "API_KEY"},
		{name: "lower", in: "token"},
		{name: "underscore first", in: "_x1"},
		{name: "one letter", in: "a"},
		{name: "longest", in: strings.Repeat("a", 128)},
		{name: "empty", in: "", wantErr: "empty secret name"},
		{name: "too long", in: strings.Repeat("a", 129), wantErr: "use at most 128"},
		{name: "hyphen", in: "a-b", wantErr: `secret name "a-b": use letters, digits and _, not starting with a digit`},
		{name: "digit first", in: "1A", wantErr: "not starting with a digit"},
		{name: "dot", in: "a.b", wantErr: "use letters"},
		{name: "dot first", in: ".data", wantErr: "use letters"},
		{name: "slash", in: "a/b", wantErr: "use letters"},
		{name: "space", in: "A B", wantErr: "use letters"},
		{name: "non-ASCII", in: "clé", wantErr: "use letters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckName(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("CheckName(%q) = %v, want nil", tc.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CheckName(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
			}
		})
	}
}
