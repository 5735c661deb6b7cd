package cgroups

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are the limits a sandbox's cgroup enforces.
type Limits struct {
	MemoryBytes uint64
	// SwapBytes is the swap the sandbox may use on top of MemoryBytes:
	// always 0 for boxer (v1 memory.memsw.limit_in_bytes equal to the memory
	// limit; v2 memory.swap.max 0).
	SwapBytes   uint64
	CPUQuotaUs  int64 // -1 for no quota
	CPUPeriodUs uint64
	Pids        uint64 // ^0 for no limit
}

// pageRound is how the kernel stores memory limits: rounded down to pages.
func pageRound(n uint64) uint64 { return n &^ 4095 }

// Verify compares what a cgroup enforces with what was asked for and
// returns an error naming the first limit the kernel does not enforce.
func Verify(got, want Limits) error {
	switch {
	case pageRound(got.MemoryBytes) != pageRound(want.MemoryBytes):
		return fmt.Errorf("memory limit is %s, want %d", human(got.MemoryBytes), want.MemoryBytes)
	case got.SwapBytes != want.SwapBytes:
		return fmt.Errorf("swap limit is %s, want %d", human(got.SwapBytes), want.SwapBytes)
	case got.CPUQuotaUs != want.CPUQuotaUs || got.CPUPeriodUs != want.CPUPeriodUs:
		return fmt.Errorf("CPU quota is %d/%d us, want %d/%d", got.CPUQuotaUs, got.CPUPeriodUs, want.CPUQuotaUs, want.CPUPeriodUs)
	case got.Pids != want.Pids:
		return fmt.Errorf("pids limit is %s, want %d", human(got.Pids), want.Pids)
	}
	return nil
}

func human(n uint64) string {
	if n == ^uint64(0) {
		return "unlimited"
	}
	return strconv.FormatUint(n, 10)
}

// parseCPUMax parses cgroup v2 cpu.max: "QUOTA PERIOD", QUOTA "max" for none.
func parseCPUMax(data []byte) (int64, uint64, error) {
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("parsing cpu.max %q: want QUOTA PERIOD", strings.TrimSpace(string(data)))
	}
	period, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing cpu.max period: %w", err)
	}
	if f[0] == "max" {
		return -1, period, nil
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing cpu.max quota: %w", err)
	}
	return quota, period, nil
}
