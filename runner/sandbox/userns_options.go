package sandbox

// UsernsOptions are the operator's settings of runc sandboxes' user
// namespaces: by default each sandbox has its own, mapping ids 0-65535
// onto a block of host ids that no other live sandbox has.
type UsernsOptions struct {
	// Host runs sandboxes in the host's user namespace, as boxer did
	// before: they share the host's ids and per-user counters. Only when
	// the operator asks (--userns=host).
	Host bool
	// Range is the host ids the blocks come from, START:COUNT; empty
	// means userns.DefaultRange.
	Range string
	// Dir holds the blocks' leases; empty means userns.LeaseDir (tests
	// set their own).
	Dir string
}
