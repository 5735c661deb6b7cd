package contract

import (
	"errors"
	"strings"
	"testing"
)

func TestTallyCeilings(t *testing.T) {
	var tl Tally
	var releases []func()
	for i := range 2 {
		rel, err := tl.Take(HeldWatch, "a", 2, 0, 3)
		if err != nil {
			t.Fatalf("watch %d of a: %v", i+1, err)
		}
		releases = append(releases, rel)
	}
	_, err := tl.Take(HeldWatch, "a", 2, 0, 3)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "max-watches-per-caller" || le.Max != 2 || le.Server || !strings.Contains(err.Error(), "max-watches-per-caller 2") {
		t.Fatalf("a's third watch: %v, want a LimitError naming max-watches-per-caller 2", err)
	}
	relB, err := tl.Take(HeldWatch, "b", 2, 0, 3)
	if err != nil {
		t.Fatalf("b's watch beside a full a: %v", err)
	}
	if _, err := tl.Take(HeldWatch, "c", 2, 0, 3); !errors.As(err, &le) || !le.Server || le.Limit != "max-watches" || le.Max != 3 {
		t.Fatalf("a watch past the server's 3: %v, want the server's LimitError", err)
	}
	// Other kinds are counted apart; others held elsewhere count too.
	if _, err := tl.Take(HeldProcess, "a", 3, 3, 0); !errors.As(err, &le) || le.Limit != "max-processes-per-caller" {
		t.Fatalf("a process past 3 running: %v", err)
	}
	releases[0]()
	releases[0]() // once only
	relB()
	if got := tl.count(HeldWatch, "a"); got != 1 {
		t.Errorf("a holds %d watches, want 1", got)
	}
	if _, err := tl.Take(HeldWatch, "a", 2, 0, 3); err != nil {
		t.Errorf("a's watch after one ended: %v", err)
	}
	// The CLI's caller "" has no ceiling of its own.
	for range 5 {
		if _, err := tl.Take(HeldStream, "", 1, 0, 0); err != nil {
			t.Fatalf("the CLI's stream: %v", err)
		}
	}
}

func TestCeilingDefaults(t *testing.T) {
	tests := []struct {
		name string
		smax SessionMaxima
		want int
	}{
		{"default", SessionMaxima{}, DefaultMaxSessions / 4},
		{"a quarter", SessionMaxima{Sessions: 8}, 2},
		{"at least one", SessionMaxima{Sessions: 2}, 1},
		{"set", SessionMaxima{Sessions: 8, PerCaller: 8}, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.smax.PerCallerSessions(); got != tc.want {
				t.Errorf("PerCallerSessions = %d, want %d", got, tc.want)
			}
		})
	}
	watches := []struct {
		name       string
		c          Ceilings
		instances  int
		wantServer int
	}{
		{"half the kernel's", Ceilings{}, 128, 64},
		{"lower set", Ceilings{Watches: 10}, 128, 10},
		{"higher lowered", Ceilings{Watches: 1000}, 128, 64},
		{"unknown", Ceilings{}, 0, 64},
	}
	for _, tc := range watches {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.ServerWatches(tc.instances); got != tc.wantServer {
				t.Errorf("serverWatches(%d) = %d, want %d", tc.instances, got, tc.wantServer)
			}
		})
	}
	var le *LimitError
	if err := error(&SessionLimitError{Max: 4}); !errors.As(err, &le) || le.Limit != "max-sessions" || le.Max != 4 || !le.Server {
		t.Errorf("SessionLimitError as LimitError: %+v", le)
	}
}
