// Command bench times one full sandbox cycle ("fresh hardened sandbox, print
// 1, collect output, destroy") three ways in one run, interleaved so that
// all three see the same machine: boxer run, ctr run of the same image with
// comparable flags, and runc run on an equivalent bundle built from boxer's
// own spec. It prints medians, p90 and the ratios.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/oci"
	"github.com/boxer-dev/boxer/runner"
	"github.com/boxer-dev/boxer/seccomp"
)

func main() {
	n := flag.Int("n", 30, "runs per contender")
	boxerBin := flag.String("boxer", "boxer", "boxer binary")
	flag.Parse()
	if err := run(*n, *boxerBin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type contender struct {
	name  string
	cmd   func(i int) *exec.Cmd
	times []time.Duration
}

func run(n int, boxerBin string) error {
	cfg := daemon.FromEnv()
	address := os.Getenv("BOXER_ADDRESS")
	if address == "" {
		address = cfg.Address()
		if cfg.SystemAddress != "" && daemon.Answers(cfg.SystemAddress) {
			address = cfg.SystemAddress
		}
	}
	ctr := filepath.Join(daemon.LibexecDir, "ctr")
	image := runner.Presets["python"].Image

	bundle, err := os.MkdirTemp("", "boxer-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bundle)
	if err := makeBundle(bundle, cfg.Cache); err != nil {
		return fmt.Errorf("making runc bundle: %w", err)
	}

	contenders := []*contender{
		{name: "runc run (bundle)", cmd: func(i int) *exec.Cmd {
			return exec.Command("runc", "run", "--bundle", bundle, fmt.Sprintf("bench-runc-%d-%d", os.Getpid(), i+1))
		}},
		{name: "ctr run", cmd: func(i int) *exec.Cmd {
			return exec.Command(ctr, "-a", address, "-n", "boxer", "run", "--rm", "--read-only", "--seccomp",
				"--memory-limit", "268435456", "--cpus", "1", "--user", "65534:65534",
				"--mount", "type=tmpfs,src=tmpfs,dst=/tmp,options=nosuid:nodev:size=67108864",
				image, fmt.Sprintf("bench-ctr-%d-%d", os.Getpid(), i+1), "python3", "-c", "print(1)")
		}},
		{name: "boxer run", cmd: func(int) *exec.Cmd {
			return exec.Command(boxerBin, "--address", address, "run", "--lang", "python", "-c", "print(1)")
		}},
		{name: "host python", cmd: func(int) *exec.Cmd {
			return exec.Command(hostPython(), "-c", "print(1)")
		}},
	}
	// One warm-up each: page cache, first view of the image.
	for _, c := range contenders {
		if out, err := c.cmd(-1).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("1")) {
			return fmt.Errorf("%s: %v: %s", c.name, err, out)
		}
	}
	for i := 0; i < n; i++ {
		for _, c := range contenders {
			cmd := c.cmd(i)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, io.Discard
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil || strings.TrimSpace(out.String()) != "1" {
				return fmt.Errorf("%s run %d: %v: %q", c.name, i, err, out.String())
			}
			c.times = append(c.times, d)
		}
	}
	host, _ := os.Hostname()
	fmt.Printf("boxer bench: %d cycles each of `python3 -c 'print(1)'` in a fresh hardened sandbox, interleaved (%s, %s)\n\n", n, host, time.Now().Format(time.RFC3339))
	fmt.Printf("%-20s %10s %10s %10s %14s\n", "", "p50 ms", "p90 ms", "min ms", "p50 / runc")
	base := median(contenders[0].times)
	for _, c := range contenders {
		fmt.Printf("%-20s %10.1f %10.1f %10.1f %14.2f\n", c.name, ms(median(c.times)), ms(pct(c.times, 0.9)), ms(pct(c.times, 0)), float64(median(c.times))/float64(base))
	}
	b, cr := median(contenders[2].times), median(contenders[1].times)
	fmt.Printf("\nboxer / ctr run = %.2f (target <= 1.00)\n", float64(b)/float64(cr))
	for _, warm := range []string{"python", ""} {
		if err := benchServe(n, boxerBin, address, warm); err != nil {
			return err
		}
	}
	return nil
}

// benchServe starts 'boxer serve' on loopback and measures POST /v1/runs:
// latency with one client, and runs per second with 1 and 4 clients.
func benchServe(n int, boxerBin, address, warm string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(boxerBin, "--address", address, "serve", "--listen", addr, "--queue", "64", "--warm", warm)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	url := "http://" + addr
	for deadline := time.Now().Add(15 * time.Second); ; {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("boxer serve did not answer on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	post := func() (time.Duration, error) {
		start := time.Now()
		resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(`{"lang":"python","code":"print(1)"}`))
		if err != nil {
			return 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"stdout":"1\n"`)) {
			return 0, fmt.Errorf("POST /v1/runs: %d %s", resp.StatusCode, body)
		}
		return time.Since(start), nil
	}
	if _, err := post(); err != nil {
		return err
	}
	name := "boxer serve (warm)"
	if warm == "" {
		name = "boxer serve (cold)"
	}
	fmt.Printf("\n%-20s %10s %10s %10s %14s\n", name, "p50 ms", "p99 ms", "runs/s", "clients")
	for _, clients := range []int{1, 4} {
		var mu sync.Mutex
		var times []time.Duration
		var firstErr error
		start := time.Now()
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n; i++ {
					d, err := post()
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					times = append(times, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		rate := float64(len(times)) / time.Since(start).Seconds()
		fmt.Printf("%-20s %10.1f %10.1f %10.1f %14d\n", "POST /v1/runs", ms(median(times)), ms(pct(times, 0.99)), rate, clients)
	}
	return nil
}

// makeBundle unpacks the python image's cached layer and writes boxer's own
// hardened spec for `python3 -c 'print(1)'` next to it.
func makeBundle(dir, cache string) error {
	layers, _ := filepath.Glob(filepath.Join(cache, "*", "layer.tar"))
	if len(layers) == 0 {
		return fmt.Errorf("no cached layer under %s: run 'boxer setup' first", cache)
	}
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return err
	}
	// tar(1) keeps owners, modes and links exactly.
	if out, err := exec.Command("tar", "-C", rootfs, "-xf", newest(layers)).CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking layer: %v: %s", err, out)
	}
	spec, err := oci.New(context.Background(), "bench",
		oci.WithHardenedBase,
		oci.WithProcess([]string{"python3", "-c", "print(1)"}, []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"}, oci.Workspace),
		oci.WithLimits(oci.Limits{MemoryBytes: runner.DefaultMemory, CPUs: 1, Pids: runner.DefaultPids, TmpBytes: runner.DefaultTmpSize, NoFile: 1024}),
		oci.WithSeccomp(seccomp.DefaultProfile()),
		oci.WithCgroupsPath("/boxer-bench/runc"),
	)
	if err != nil {
		return err
	}
	spec.Root.Path = rootfs
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

func newest(files []string) string {
	sort.Slice(files, func(i, j int) bool {
		a, _ := os.Stat(files[i])
		b, _ := os.Stat(files[j])
		return a.ModTime().After(b.ModTime())
	})
	return files[0]
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// hostPython is the distribution's python3: a version manager's shim on the
// PATH would time itself, not python.
func hostPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}
