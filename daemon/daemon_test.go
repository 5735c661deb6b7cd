package daemon

import "testing"

func TestFromEnv(t *testing.T) {
	t.Setenv("BOXER_ROOT", "")
	t.Setenv("BOXER_STATE", "")
	t.Setenv("BOXER_CACHE", "")
	c := FromEnv()
	if c.Address() != "/run/boxer/containerd.sock" || c.ContainerdRoot() != "/var/lib/boxer/containerd" || c.ContainerdState() != "/run/boxer/containerd" {
		t.Errorf("defaults differ from docs/reference.md: %s %s %s", c.Address(), c.ContainerdRoot(), c.ContainerdState())
	}
	if c.Cache != "/var/lib/boxer/cache" || c.SystemAddress != DefaultSystemAddress {
		t.Errorf("cache %q system %q", c.Cache, c.SystemAddress)
	}
	t.Setenv("BOXER_STATE", "/tmp/x")
	t.Setenv("BOXER_SYSTEM_ADDRESS", "")
	c = FromEnv()
	if c.Address() != "/tmp/x/containerd.sock" || c.SystemAddress != "" {
		t.Errorf("overrides ignored: %s %q", c.Address(), c.SystemAddress)
	}
}
