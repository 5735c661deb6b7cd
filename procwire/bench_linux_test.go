package procwire

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"testing"
)

// BenchmarkStartTrue: start to exit of true through boxer-procd over
// pipes, output read to its end and the process released: the floor of a
// session exec on this path.
func BenchmarkStartTrue(b *testing.B) {
	s := startServer(b)
	c := New(s.out, s.in, Limits{})
	if _, err := c.Hello(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		p, err := c.Start(ctx, Spec{Args: []string{"/bin/true"}, Env: env})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, p.Stdout()); err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, p.Stderr()); err != nil {
			b.Fatal(err)
		}
		if x, err := p.Wait(ctx); err != nil || x != (Exit{}) {
			b.Fatalf("true ended %+v %v", x, err)
		}
		if err := p.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOSExecTrue: the same true started by Go's os/exec on the
// host, measured beside BenchmarkStartTrue for a ratio that the
// machine's load does not skew.
func BenchmarkOSExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutput: 64 MiB of a process's stdout through boxer-procd,
// under the default window.
func BenchmarkOutput(b *testing.B) {
	s := startServer(b)
	c := New(s.out, s.in, Limits{})
	if _, err := c.Hello(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const size = 64 << 20
	b.SetBytes(size)
	for b.Loop() {
		p, err := c.Start(ctx, Spec{Args: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}, Env: env})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, p.Stdout())
		if err != nil || n != size {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		if _, err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		if err := p.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
