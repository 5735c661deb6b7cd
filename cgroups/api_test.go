package cgroups

// The API has a body per platform (cgroups_linux.go, cgroups_other.go):
// these pin the signatures both must have, so that vet on either platform
// catches one that drifted.
var (
	_ func() Mode                        = DetectMode
	_ func(Mode) error                   = Check
	_ func(Mode) []string                = Controllers
	_ func(Mode, string) (Stats, error)  = ReadStats
	_ func(Mode, string) (Limits, error) = ReadLimits
	_ func(Mode, string) error           = Remove
	_ func(Mode, string) bool            = Exists
	_ func(Mode, string) int             = Kill
)
