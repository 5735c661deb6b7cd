//go:build !unix

package secrets

import (
	"os"
	"os/exec"
)

// killGroupOnCancel leaves cmd as it is: without process groups, cancelling
// kills the command alone.
func killGroupOnCancel(cmd *exec.Cmd) {}

// openValueFile opens path for reading.
func openValueFile(path string) (*os.File, error) {
	return os.Open(path)
}
