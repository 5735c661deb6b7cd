package daemon

import "testing"

func TestRuncHasEscapeFixes(t *testing.T) {
	tests := []struct {
		name    string
		version string
		want    bool
		wantErr bool
	}{
		{name: "debian 12", version: "1.1.5+ds1", want: false},
		{name: "1.1 line", version: "1.1.15", want: false},
		{name: "1.0", version: "1.0.0", want: false},
		{name: "before 1.2.8", version: "1.2.7", want: false},
		{name: "1.2.8", version: "1.2.8", want: true},
		{name: "after 1.2.8", version: "1.2.9", want: true},
		{name: "before 1.3.3", version: "1.3.2", want: false},
		{name: "1.3.3", version: "1.3.3", want: true},
		{name: "after 1.3.3", version: "1.3.6", want: true},
		{name: "1.4.0 release candidate", version: "1.4.0-rc.2", want: false},
		{name: "1.4.0", version: "1.4.0", want: true},
		{name: "1.4.3", version: "1.4.3", want: true},
		{name: "pinned", version: "1.5.2", want: true},
		{name: "1.5 release candidate", version: "1.5.0-rc.1", want: true},
		{name: "leading v", version: "v1.3.3", want: true},
		{name: "2.0", version: "2.0.0", want: true},
		{name: "ubuntu suffix", version: "1.1.12-0ubuntu2~22.04.1", want: false},
		{name: "two parts", version: "1.2", wantErr: true},
		{name: "not a number", version: "1.x.0", wantErr: true},
		{name: "empty", version: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RuncHasEscapeFixes(tc.version)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RuncHasEscapeFixes(%q) error = %v, want error %t", tc.version, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RuncHasEscapeFixes(%q) = %t, want %t", tc.version, got, tc.want)
			}
		})
	}
}

func TestRuncHasNovember2026Fixes(t *testing.T) {
	tests := []struct {
		name    string
		version string
		want    bool
		wantErr bool
	}{
		{name: "debian 12", version: "1.1.5+ds1", want: false},
		{name: "1.4.4 has the CVE's fix only", version: "1.4.4", want: false},
		{name: "1.5.2", version: "1.5.2", want: false},
		{name: "pinned", version: "1.5.3", want: true},
		{name: "after 1.5.3", version: "1.5.4", want: true},
		{name: "1.6.0 release candidate", version: "1.6.0-rc.1", want: false},
		{name: "1.6.0", version: "1.6.0", want: true},
		{name: "leading v", version: "v1.5.3", want: true},
		{name: "two parts", version: "1.5", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RuncHasNovember2026Fixes(tc.version)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RuncHasNovember2026Fixes(%q) error = %v, want error %t", tc.version, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RuncHasNovember2026Fixes(%q) = %t, want %t", tc.version, got, tc.want)
			}
		})
	}
}

func TestRuncVersion(t *testing.T) {
	tests := []struct {
		name, out, want string
	}{
		{name: "pinned", out: "runc version 1.5.2\ncommit: v1.5.2 (Go module h1:x)\nspec: 1.3.0\n", want: "1.5.2"},
		{name: "debian", out: "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1\n", want: "1.1.5+ds1"},
		{name: "not runc", out: "runsc version v0.0.0\n", want: ""},
		{name: "empty", out: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuncVersion(tc.out); got != tc.want {
				t.Errorf("RuncVersion(%q) = %q, want %q", tc.out, got, tc.want)
			}
		})
	}
}
