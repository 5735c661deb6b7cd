//go:build linux

package main

// Building an image from a Dockerfile's steps (issue 46): cold, cached,
// and with its last step changed.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The rows of benchBuild, by name.
const (
	buildColdRow    = "four-step Dockerfile build (RUN, COPY, ENV, RUN on boxer/python), cold: --no-cache"
	buildCachedRow  = "the same build again, every step cached"
	buildChangedRow = "the same build with its last RUN changed: that step alone rerun"
)

// buildDockerfile is the build the rows time; %d changes its last RUN.
// Every step names buildMark, by which the bench finds its cache
// entries to remove them, and no one else's.
const buildDockerfile = `FROM boxer/python
RUN python3 -c "open('/opt/boxer-bench-build', 'w').write('made')"
COPY app.py /opt/boxer-bench-build.py
ENV BOXER_BENCH_BUILD=hello
RUN echo %d > /tmp/boxer-bench-build && cp /tmp/boxer-bench-build /opt/boxer-bench-build.version
`

const buildMark = "boxer-bench-build"

// benchBuild times n builds of each row, interleaved, and removes the
// image and its cache entries after.
func benchBuild(n int, boxerBin, address string) ([]row, error) {
	dir, err := os.MkdirTemp("", "boxer-bench-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "app.py"), []byte("print('hello')\n"), 0o644); err != nil {
		return nil, err
	}
	const image = buildMark
	build := func(version int, flags ...string) (time.Duration, error) {
		file := filepath.Join(dir, "Dockerfile")
		if err := os.WriteFile(file, fmt.Appendf(nil, buildDockerfile, version), 0o644); err != nil {
			return 0, err
		}
		args := append([]string{"--address", address, "image", "build", image, "-f", file}, flags...)
		cmd := exec.Command(boxerBin, append(args, dir)...)
		t := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("image build: %v: %s", err, out)
		}
		return time.Since(t), nil
	}
	defer func() {
		_ = exec.Command(boxerBin, "--address", address, "image", "rm", image).Run()
		out, _ := exec.Command(boxerBin, "--address", address, "image", "ls", "--steps").Output()
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 2 && (strings.Contains(line, buildMark) || strings.Contains(line, "BOXER_BENCH_BUILD")) {
				_ = exec.Command(boxerBin, "--address", address, "image", "rm", f[0]).Run()
			}
		}
	}()
	progress("Dockerfile builds: %d each of cold, cached, last step changed", n)
	rows := []row{{name: buildColdRow}, {name: buildCachedRow}, {name: buildChangedRow}}
	for i := range n {
		for j, flags := range [][]string{{"--no-cache"}, nil, nil} {
			version := 0
			if j == 2 {
				version = i + 1
			}
			d, err := build(version, flags...)
			if err != nil {
				return nil, err
			}
			rows[j].times = append(rows[j].times, d)
			if j == 2 {
				// Back to version 0, cached, for the next cached row.
				if _, err := build(0); err != nil {
					return nil, err
				}
			}
		}
	}
	return rows, nil
}

// printBuild prints benchBuild's rows and what they mean against the
// issue's promise (a cached rebuild under a second).
func printBuild(rows []row) {
	fmt.Println("\n| Dockerfile build | p50 ms | p90 ms |")
	fmt.Println("|---|---|---|")
	p50 := map[string]time.Duration{}
	for _, r := range rows {
		p50[r.name] = median(r.times)
		fmt.Printf("| %s | %.0f | %.0f |\n", r.name, ms(median(r.times)), ms(pct(r.times, 0.9)))
	}
	fmt.Printf("\ncached rebuild p50 = %.0f ms (target < 1000); cached / cold = %.2f; last step changed / cold = %.2f\n",
		ms(p50[buildCachedRow]), float64(p50[buildCachedRow])/float64(p50[buildColdRow]), float64(p50[buildChangedRow])/float64(p50[buildColdRow]))
}
