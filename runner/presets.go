package runner

import (
	"path"
	"sort"

	"github.com/boxer-dev/boxer/oci"
)

// Preset is a language: the image it runs in, how its interpreter is called
// and the file name its code gets.
type Preset struct {
	Name string
	// Image is the default image reference, built by 'boxer setup'.
	Image string
	// Packages are the Debian packages of the default image.
	Packages []string
	// File is the name of the code file under oci.CodeDir.
	File string
	// Command is the interpreter argv; the code file's path is appended.
	Command []string
	// Env is set before the request's own variables.
	Env []string
}

// Args is the argv that runs the preset's code file.
func (p Preset) Args() []string {
	return append(append([]string{}, p.Command...), path.Join(oci.CodeDir, p.File))
}

// Presets are the languages boxer knows.
var Presets = map[string]Preset{
	"python": {
		Name:  "python",
		Image: "boxer/python",
		// python3 is the interpreter and its whole standard library;
		// tzdata is what the zoneinfo module reads.
		Packages: []string{"python3", "tzdata"},
		File:     "main.py",
		Command:  []string{"python3", "-u"},
		// The root is read-only: no bytecode cache to write.
		Env: []string{"PYTHONDONTWRITEBYTECODE=1"},
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
