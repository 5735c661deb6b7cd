package kubernetes

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// imagePackages are the Debian packages the image must name, for the
// programs boxer runs on a node: debootstrap, gpgv and the keyring (boxer
// setup), unshare and sh (a user namespace without boxer-wrap), curl (the
// probes), the trust bundle.
var imagePackages = []string{"ca-certificates", "curl", "dash", "debian-archive-keyring", "debootstrap", "gpgv", "util-linux"}

// imageBinaries are what boxer looks for beside itself.
var imageBinaries = []string{"boxer", "boxer-init", "boxer-wrap", "boxer-procd"}

// TestContainerfile: the image's last stage installs every package boxer
// needs by name and copies boxer's binaries beside it, each built in the
// build stage.
func TestContainerfile(t *testing.T) {
	f, err := os.Open("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parsing Containerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("reading Containerfile's instructions: %v", err)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and the image", len(stages))
	}
	built := map[string]bool{}
	for _, c := range stages[0].Commands {
		if run, ok := c.(*instructions.RunCommand); ok {
			for _, f := range strings.Fields(strings.Join(run.CmdLine, " ")) {
				if p, ok := strings.CutPrefix(f, "/out/"); ok {
					built[p] = true
				}
			}
		}
	}
	var installed, copied []string
	for _, c := range stages[1].Commands {
		switch c := c.(type) {
		case *instructions.RunCommand:
			words := strings.Fields(strings.Join(c.CmdLine, " "))
			if i := slices.Index(words, "install"); i > 0 && words[i-1] == "apt-get" {
				for _, w := range words[i+1:] {
					if w == "&&" {
						break
					}
					if !strings.HasPrefix(w, "-") {
						installed = append(installed, w)
					}
				}
			}
		case *instructions.CopyCommand:
			if c.From == stages[0].Name {
				for _, src := range c.SourcePaths {
					copied = append(copied, strings.TrimPrefix(src, "/out/"))
				}
			}
		}
	}
	for _, p := range imagePackages {
		if !slices.Contains(installed, p) {
			t.Errorf("the image does not install %s (installs %v)", p, installed)
		}
	}
	for _, b := range imageBinaries {
		if !slices.Contains(copied, b) || !built[b] {
			t.Errorf("%s: copied %v, built %v", b, slices.Contains(copied, b), built[b])
		}
	}
}
