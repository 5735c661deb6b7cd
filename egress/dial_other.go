//go:build !linux

package egress

import "errors"

// NetnsDialer needs Linux's network namespaces.
func NetnsDialer(path string) (Dialer, error) {
	return nil, errors.New("dialing from a network namespace needs Linux")
}
