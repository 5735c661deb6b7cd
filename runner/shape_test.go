package runner

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/runner/contract"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestShapeCoversRequest proves that no field of Request can be forgotten
// by the pool's matcher: each either changes the Shape (a pre-created
// sandbox of another shape is never taken) or is part of the delivery,
// under the same name and type, given to the sandbox when its program
// starts. A field added to Request fails here until it is one or the other.
func TestShapeCoversRequest(t *testing.T) {
	mutate := map[string]func(*contract.Request){
		"Lang":        func(r *contract.Request) { r.Lang = "javascript"; r.Image = "" },
		"Code":        func(r *contract.Request) { r.Code = []byte("print(2)") },
		"Image":       func(r *contract.Request) { r.Image = "other/image" },
		"Args":        func(r *contract.Request) { r.Args = []string{"false"} },
		"Env":         func(r *contract.Request) { r.Env = []string{"B=2"} },
		"Timeout":     func(r *contract.Request) { r.Timeout = time.Minute },
		"MemoryBytes": func(r *contract.Request) { r.MemoryBytes = 512 << 20 },
		"CPUs":        func(r *contract.Request) { r.CPUs = 2 },
		"Pids":        func(r *contract.Request) { r.Pids = 10 },
		"TmpBytes":    func(r *contract.Request) { r.TmpBytes = 8 << 20 },
		"OutputLimit": func(r *contract.Request) { r.OutputLimit = 10 },
		"UID":         func(r *contract.Request) { r.UID = 1001 },
		"GID":         func(r *contract.Request) { r.GID = 1001 },
		"UserSet":     func(r *contract.Request) { r.UserSet = !r.UserSet },
		"Runtime":     func(r *contract.Request) { r.Runtime = "runsc" },
		"Network":     func(r *contract.Request) { r.Network = "elsewhere" },
		"Seccomp": func(r *contract.Request) {
			r.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}}}}
		},
		"Stdin":   func(r *contract.Request) { r.Stdin = strings.NewReader("x") },
		"CopyIn":  func(r *contract.Request) { r.CopyIn = os.TempDir() },
		"Files":   func(r *contract.Request) { r.Files = map[string][]byte{"a": []byte("b")} },
		"CopyOut": func(r *contract.Request) { r.CopyOut = "/nonexistent/out" },
		"Stdout":  func(r *contract.Request) { r.Stdout = new(bytes.Buffer) },
		"Stderr":  func(r *contract.Request) { r.Stderr = new(bytes.Buffer) },
		// Whether a run has egress is its shape (its sandbox has a link);
		// which hosts it may reach, and how much, are delivered.
		"AllowHosts":  func(r *contract.Request) { r.AllowHosts = []string{"b.example"} },
		"NetBytes":    func(r *contract.Request) { r.NetBytes = 1 << 20 },
		"Preload":     func(r *contract.Request) { r.Preload = []string{"json"} },
		"NoPreload":   func(r *contract.Request) { r.NoPreload = true },
		"ReturnFiles": func(r *contract.Request) { r.ReturnFiles = []string{"*.png"} },
		"ReturnBytes": func(r *contract.Request) { r.ReturnBytes = 1 << 10 },
		"Secrets":     func(r *contract.Request) { r.Secrets = []string{"API_KEY"} },
	}
	// Fields whose being set is shape but whose value is delivered: they
	// change the shape only of a base where they were unset.
	setIsShape := map[string]bool{"AllowHosts": true}
	// Two bases, so that each field can show its effect: a language run
	// with the default user, and a command run with a user of its own.
	bases := []contract.Request{
		{Lang: "python", Code: []byte("print(1)"), UID: 1000, GID: 1000},
		{Image: "boxer/bash", Args: []string{"true"}, UID: 1000, GID: 1000, UserSet: true, Env: []string{"A=1"}},
		{Lang: "python", Code: []byte("print(1)"), AllowHosts: []string{"a.example"}},
		{Lang: "python-data", Code: []byte("print(1)"), Preload: []string{"numpy"}},
	}
	delivered := map[string]reflect.Type{}
	dt := reflect.TypeOf(contract.Delivery{})
	for i := range dt.NumField() {
		delivered[dt.Field(i).Name] = dt.Field(i).Type
	}
	rt := reflect.TypeOf(contract.Request{})
	for i := range rt.NumField() {
		f := rt.Field(i)
		m, ok := mutate[f.Name]
		if !ok {
			t.Errorf("Request.%s: no mutation here: add one, and put the field in Shape or in delivery", f.Name)
			continue
		}
		changes := false
		for _, base := range bases {
			changed := base
			m(&changed)
			if !reflect.DeepEqual(reflect.ValueOf(changed).Field(i).Interface(), reflect.ValueOf(base).Field(i).Interface()) {
				if setIsShape[f.Name] && reflect.ValueOf(base).Field(i).IsZero() {
					if shapeOf(base) == shapeOf(changed) {
						t.Errorf("Request.%s: setting it does not change the Shape", f.Name)
					}
					continue
				}
				changes = changes || shapeOf(base) != shapeOf(changed)
			} else {
				t.Errorf("Request.%s: the mutation does not change it", f.Name)
			}
		}
		typ, isDelivered := delivered[f.Name]
		switch {
		case isDelivered && typ != f.Type:
			t.Errorf("Request.%s is %s but delivery.%s is %s", f.Name, f.Type, f.Name, typ)
		case isDelivered && changes:
			t.Errorf("Request.%s is delivered at start, yet it changes the Shape", f.Name)
		case !isDelivered && !changes:
			t.Errorf("Request.%s neither changes the Shape nor is delivered at start: a pre-created sandbox would ignore it", f.Name)
		}
		delete(delivered, f.Name)
	}
	for name := range delivered {
		t.Errorf("delivery.%s is no field of Request", name)
	}
}

// shapeOf is the shape of a request as the runner sees it: normalized
// (Normalize's own checks aside: a shape exists for any request).
func shapeOf(r contract.Request) contract.Shape {
	n, _ := r.Normalize()
	return n.Shape()
}

// TestShapeOfPoolRequest: a request that names the preset's image itself,
// or sets the defaults itself, has the pool's shape; one that differs in a
// limit does not.
func TestShapeOfPoolRequest(t *testing.T) {
	pool := shapeOf(contract.Request{Lang: "python"})
	same := shapeOf(contract.Request{Lang: "python", Image: "boxer/python", MemoryBytes: contract.DefaultMemory, Timeout: time.Second, Code: []byte("x")})
	if same != pool {
		t.Errorf("shape %+v, want the pool's %+v", same, pool)
	}
	if other := shapeOf(contract.Request{Lang: "python", Pids: 65}); other == pool {
		t.Error("a request with other limits has the pool's shape")
	}
}
