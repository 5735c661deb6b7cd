package contract

import (
	"slices"
	"strings"
	"testing"
)

// TestPresetNetEnv pins what a run with network egress adds to each preset's
// environment: pip installs into PackagesDir and Python imports from it;
// npm installs into the workspace and require finds it there.
func TestPresetNetEnv(t *testing.T) {
	python := []string{
		"PYTHONPATH=/opt/boxer/site-packages",
		"PIP_TARGET=/opt/boxer/site-packages",
		"PIP_BREAK_SYSTEM_PACKAGES=1",
		"PIP_NO_CACHE_DIR=1",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_ROOT_USER_ACTION=ignore",
	}
	node := []string{
		"NODE_PATH=/workspace/node_modules",
		"npm_config_cache=/tmp/.npm",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	}
	tests := []struct {
		name     string
		netEnv   []string
		packages []string // must be among the image's
	}{
		{name: "python", netEnv: python, packages: []string{"python3-pip", "ca-certificates"}},
		{name: "python-data", netEnv: python, packages: []string{"python3-pip", "ca-certificates"}},
		{name: "javascript", netEnv: node, packages: []string{"npm", "ca-certificates"}},
		{name: "typescript", netEnv: node, packages: []string{"npm", "ca-certificates"}},
		{name: "bash", netEnv: nil, packages: []string{"curl", "ca-certificates"}},
	}
	if got := len(tests); got != len(PresetNames()) {
		t.Fatalf("%d presets tested, want all %d", got, len(PresetNames()))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LookupPreset(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.NetEnv, tc.netEnv) {
				t.Errorf("NetEnv = %q, want %q", p.NetEnv, tc.netEnv)
			}
			for _, pkg := range tc.packages {
				if !slices.Contains(p.Packages, pkg) {
					t.Errorf("Packages = %q, want %q among them", p.Packages, pkg)
				}
			}
			// NetEnv comes after Env: a key in both would silently replace
			// the preset's own setting.
			for _, kv := range p.NetEnv {
				k, _, _ := strings.Cut(kv, "=")
				for _, e := range p.Env {
					if strings.HasPrefix(e, k+"=") {
						t.Errorf("NetEnv's %s replaces Env's %s", kv, e)
					}
				}
			}
		})
	}
}

// TestPresetNetEnvIsCopied: presets share their NetEnv slices (python and
// python-data, javascript and typescript), so a caller changing its copy
// must change neither its preset nor the other.
func TestPresetNetEnvIsCopied(t *testing.T) {
	for _, pair := range [][2]string{{"python", "python-data"}, {"javascript", "typescript"}} {
		p, err := LookupPreset(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(p.NetEnv)
		p.NetEnv[0] = "PYTHONPATH=/evil"
		_ = append(p.NetEnv[:1], "X=1")
		for _, name := range pair {
			again, _ := LookupPreset(name)
			if !slices.Equal(again.NetEnv, want) {
				t.Errorf("%s NetEnv = %q after a caller changed its copy, want %q", name, again.NetEnv, want)
			}
		}
	}
	for _, p := range Presets() {
		if len(p.NetEnv) > 0 {
			p.NetEnv[0] = "X=1"
		}
	}
	for _, p := range Presets() {
		if slices.Contains(p.NetEnv, "X=1") {
			t.Errorf("%s NetEnv changed through Presets: %q", p.Name, p.NetEnv)
		}
	}
}
