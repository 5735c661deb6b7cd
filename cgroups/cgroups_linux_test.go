package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxer-dev/boxer/fault"
)

// The v2 fixtures under testdata/v2 are cgroup2 files in the kernel's format
// (cpu.stat copied from this host's cgroup2 mount, with throttling lines as
// a memory-and-cpu-enabled cgroup has them; memory.events, memory.peak as
// Documentation/admin-guide/cgroup-v2.rst lays them out).

func TestReadStatsV2(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "boxer", "ns", "bx-1")
	copyFixtures(t, "testdata/v2", dir)
	st, err := readStatsAt(Unified, root, "/boxer/ns/bx-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{MemoryPeakBytes: 67108864, MemoryBytes: 1961984, CPUTimeNs: 373116000 * 1000, OOMKills: 2}
	if st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	// Kernels before 5.19 have no memory.peak: memory.current stands in.
	if err := os.Remove(filepath.Join(dir, "memory.peak")); err != nil {
		t.Fatal(err)
	}
	st, err = readStatsAt(Unified, root, "/boxer/ns/bx-1")
	if err != nil || st.MemoryPeakBytes != 1961984 {
		t.Errorf("without memory.peak: peak %d err %v, want 1961984", st.MemoryPeakBytes, err)
	}
}

func TestReadStatsV1(t *testing.T) {
	root := t.TempDir()
	copyFixtures(t, "testdata/v1", filepath.Join(root, "memory", "boxer", "x"))
	if err := os.MkdirAll(filepath.Join(root, "cpuacct", "boxer", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "memory", "boxer", "x", "cpuacct.usage"), filepath.Join(root, "cpuacct", "boxer", "x", "cpuacct.usage")); err != nil {
		t.Fatal(err)
	}
	st, err := readStatsAt(Hybrid, root, "/boxer/x")
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{MemoryPeakBytes: 67108864, MemoryBytes: 1748992, CPUTimeNs: 231047123, OOMKills: 1}
	if st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
}

func TestMissingFilesAreNoStat(t *testing.T) {
	st, err := readStatsAt(Unified, t.TempDir(), "/gone")
	if err != nil || st != (Stats{}) {
		t.Errorf("stats %+v err %v, want zero and nil", st, err)
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.events"), []byte("low 0\noom_kill x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readStatsAt(Unified, root, "/")
	if err == nil || !contains(err.Error(), "memory.events line 2") {
		t.Errorf("err = %v, want it to name memory.events line 2", err)
	}
}

func TestCheckV2Controllers(t *testing.T) {
	root := t.TempDir()
	copyFixtures(t, "testdata/v2", root)
	if err := checkAt(Unified, root); err != nil {
		t.Errorf("full controllers: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset io hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkAt(Unified, root)
	if !fault.Is(err) || !contains(err.Error(), "memory, cpu, pids") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want a one-line fault naming memory, cpu, pids", err)
	}
}

// TestCheckV1Controllers checks a v1 host whose controllers are not all
// mounted: plain directories where cpu and pids should be cgroup mounts.
func TestCheckV1Controllers(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"cpu", "pids"} {
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := checkAt(Legacy, root)
	if !fault.Is(err) || !contains(err.Error(), "cgroup v1 controllers "+strings.Join(required, ", ")+" are not mounted") || !contains(err.Error(), "mount -t cgroup") {
		t.Errorf("err = %v, want a fault naming every controller and saying how to mount them", err)
	}
	if err := checkAt(Unavailable, root); !fault.Is(err) || !contains(err.Error(), "no cgroup filesystem is mounted at "+root) {
		t.Errorf("no cgroups: err = %v", err)
	}
	// And a host that has them all (this one) passes.
	if m := DetectMode(); m == Legacy || m == Hybrid {
		if err := checkAt(m, Root); err != nil {
			t.Errorf("this host (%s): %v", m, err)
		}
	}
}

func TestParseMax(t *testing.T) {
	n, err := parseSingle([]byte("max\n"), "memory.max")
	if err != nil || n != ^uint64(0) {
		t.Errorf("max = %d %v", n, err)
	}
}

func TestDetectModeHere(t *testing.T) {
	// Whatever the host, detection must find some cgroup filesystem on a
	// machine that runs containers.
	if m := DetectMode(); m == Unavailable {
		t.Errorf("mode = %s", m)
	}
}

func copyFixtures(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestReadLimitsV2(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "boxer", "ns", "bx-1")
	copyFixtures(t, "testdata/v2", dir)
	want := Limits{MemoryBytes: 64 << 20, SwapBytes: 0, CPUQuotaUs: 50000, CPUPeriodUs: 100000, Pids: 64}
	got, err := readLimitsAt(Unified, root, "/boxer/ns/bx-1")
	if err != nil || got != want {
		t.Fatalf("limits = %+v, %v, want %+v", got, err, want)
	}
	if err := Verify(got, want); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// A cgroup where a limit did not take: each must be refused by name.
	tests := []struct {
		file, content, want string
	}{
		{"memory.max", "max\n", "memory limit is unlimited"},
		{"memory.swap.max", "max\n", "swap limit is unlimited"},
		{"cpu.max", "max 100000\n", "CPU quota is -1/100000"},
		{"pids.max", "max\n", "pids limit is unlimited"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "cg")
			copyFixtures(t, "testdata/v2", d)
			if err := os.WriteFile(filepath.Join(d, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readLimitsAt(Unified, filepath.Dir(d), "/cg")
			if err == nil {
				err = Verify(got, want)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A controller not enabled for the subtree: its files are missing.
	d := filepath.Join(t.TempDir(), "cg")
	copyFixtures(t, "testdata/v2", d)
	if err := os.Remove(filepath.Join(d, "pids.max")); err != nil {
		t.Fatal(err)
	}
	if _, err := readLimitsAt(Unified, filepath.Dir(d), "/cg"); err == nil {
		t.Error("missing pids.max accepted")
	}
}

func TestVerifyRoundsMemoryToPages(t *testing.T) {
	want := Limits{MemoryBytes: 100000000, CPUQuotaUs: 1, CPUPeriodUs: 1, Pids: 1}
	got := want
	got.MemoryBytes = 99999744 // what the kernel stores: whole pages
	if err := Verify(got, want); err != nil {
		t.Error(err)
	}
}

// TestExists finds a sandbox's cgroup in the v2 tree and in any one v1
// hierarchy, as the reaper needs after a runtime left one behind.
func TestExists(t *testing.T) {
	v2 := t.TempDir()
	if existsAt(Unified, v2, "/boxer/ns/bx-1") {
		t.Error("v2: found a cgroup that is not there")
	}
	copyFixtures(t, "testdata/v2", filepath.Join(v2, "boxer", "ns", "bx-1"))
	if !existsAt(Unified, v2, "/boxer/ns/bx-1") || existsAt(Unified, v2, "/boxer/ns/bx-2") {
		t.Error("v2: exists is wrong")
	}
	v1 := t.TempDir()
	for _, c := range []string{"memory", "pids", "cpu"} {
		if err := os.MkdirAll(filepath.Join(v1, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if existsAt(Hybrid, v1, "/boxer/ns/bx-1") {
		t.Error("v1: found a cgroup that is not there")
	}
	if err := os.MkdirAll(filepath.Join(v1, "pids", "boxer", "ns", "bx-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !existsAt(Hybrid, v1, "/boxer/ns/bx-1") || existsAt(Legacy, v1, "/boxer/ns/bx-2") {
		t.Error("v1: exists is wrong")
	}
}
