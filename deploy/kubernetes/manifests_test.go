// Package kubernetes holds the manifests of a boxer fleet on Kubernetes and
// the test that decodes them strictly and checks what boxer needs of them.
package kubernetes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxer-dev/boxer/cgroups"
	"github.com/boxer-dev/boxer/daemon"
	"github.com/boxer-dev/boxer/snapshots"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Paths boxer uses on a node, as the code has them. The two that live in
// Linux-only files are spelled out here: egress.LeaseDir and
// reaper.RuncRoot.
const (
	leaseDir = "/run/boxer/net"
	runcRoot = "/run/containerd/runc"
	// socket is the node's containerd, containerd's own default.
	socket = "/run/containerd/containerd.sock"
	// namespace is boxer's containerd namespace on every node.
	namespace = "boxer"
	// runscLabel marks the nodes of the runsc pool.
	runscLabel = "boxer.dev/runsc"
)

// kustomization is the part of kustomize's Kustomization these manifests
// use: any other field is refused, as for the Kubernetes objects.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// manifests is every object of the directory, by type.
type manifests struct {
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	secrets         []*corev1.Secret
	daemonSets      []*appsv1.DaemonSet
	services        []*corev1.Service
	policies        []*networkingv1.NetworkPolicy
	kustomizations  []*kustomization
	files           []string
}

// decoders maps apiVersion and kind to a fresh object of that type and the
// function that files it.
func (m *manifests) decoders() map[string]func() (any, func()) {
	return map[string]func() (any, func()){
		"v1/Namespace": func() (any, func()) {
			o := &corev1.Namespace{}
			return o, func() { m.namespaces = append(m.namespaces, o) }
		},
		"v1/ServiceAccount": func() (any, func()) {
			o := &corev1.ServiceAccount{}
			return o, func() { m.serviceAccounts = append(m.serviceAccounts, o) }
		},
		"v1/Secret": func() (any, func()) {
			o := &corev1.Secret{}
			return o, func() { m.secrets = append(m.secrets, o) }
		},
		"apps/v1/DaemonSet": func() (any, func()) {
			o := &appsv1.DaemonSet{}
			return o, func() { m.daemonSets = append(m.daemonSets, o) }
		},
		"v1/Service": func() (any, func()) {
			o := &corev1.Service{}
			return o, func() { m.services = append(m.services, o) }
		},
		"networking.k8s.io/v1/NetworkPolicy": func() (any, func()) {
			o := &networkingv1.NetworkPolicy{}
			return o, func() { m.policies = append(m.policies, o) }
		},
		"kustomize.config.k8s.io/v1beta1/Kustomization": func() (any, func()) {
			o := &kustomization{}
			return o, func() { m.kustomizations = append(m.kustomizations, o) }
		},
	}
}

// load decodes every document of every *.yaml file in dir strictly: a
// duplicate key, an unknown field or an unknown kind fails the test.
func load(t *testing.T, dir string) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	m := &manifests{}
	decoders := m.decoders()
	for _, f := range files {
		m.files = append(m.files, filepath.Base(f))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: reading document %d: %v", f, i, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			if err := decodeStrict(doc, decoders); err != nil {
				t.Errorf("%s: document %d: %v", filepath.Base(f), i, err)
			}
		}
	}
	return m
}

// stripComments drops whole-line comments, to tell an empty document.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func decodeStrict(doc []byte, decoders map[string]func() (any, func())) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return err
	}
	newObj, ok := decoders[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return fmt.Errorf("unknown kind %s %s", tm.APIVersion, tm.Kind)
	}
	obj, file := newObj()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: trailing data", tm.Kind)
	}
	file()
	return nil
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := load(t, ".")
	if len(m.namespaces) != 1 || m.namespaces[0].Name != namespace {
		t.Fatalf("want one Namespace %q, got %d", namespace, len(m.namespaces))
	}
	if got := m.namespaces[0].Labels["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("namespace pod-security enforce = %q, want privileged (boxer's pods are privileged)", got)
	}
	if len(m.daemonSets) != 2 || len(m.services) != 3 || len(m.secrets) != 1 || len(m.policies) != 1 || len(m.serviceAccounts) != 1 {
		t.Errorf("got %d DaemonSets, %d Services, %d Secrets, %d NetworkPolicies, %d ServiceAccounts; want 2, 3, 1, 1, 1",
			len(m.daemonSets), len(m.services), len(m.secrets), len(m.policies), len(m.serviceAccounts))
	}
	for _, o := range m.objects() {
		if o.Namespace != namespace {
			t.Errorf("%s is in namespace %q, want %q", o.Name, o.Namespace, namespace)
		}
	}
}

// objects is the metadata of every namespaced object.
func (m *manifests) objects() []metav1.ObjectMeta {
	var out []metav1.ObjectMeta
	for _, o := range m.serviceAccounts {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range m.secrets {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range m.daemonSets {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range m.services {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range m.policies {
		out = append(out, o.ObjectMeta)
	}
	return out
}

// TestKustomizationListsTheFleet: kubectl apply -k gets every manifest but
// the Secret, whose placeholder must never overwrite the real token.
func TestKustomizationListsTheFleet(t *testing.T) {
	m := load(t, ".")
	if len(m.kustomizations) != 1 {
		t.Fatalf("want one kustomization.yaml, got %d", len(m.kustomizations))
	}
	var want []string
	for _, f := range m.files {
		if f != "kustomization.yaml" && f != "secret.yaml" {
			want = append(want, f)
		}
	}
	got := slices.Clone(m.kustomizations[0].Resources)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources = %v, want %v", got, want)
	}
}

// pod is what the checks read of one DaemonSet.
type pod struct {
	ds      *appsv1.DaemonSet
	spec    corev1.PodSpec
	boxer   corev1.Container
	global  map[string]string // flags before the command
	command string
	flags   map[string][]string // the command's flags
}

// boolFlags are the flags written bare (--name); each records "true".
var boolFlags = map[string]bool{"public-health": true}

// boxerArgs splits boxer's argv: global flags, the command, its flags.
// Every flag is written --name=value, but for boolFlags, written --name.
func boxerArgs(t *testing.T, args []string) (global map[string]string, command string, flags map[string][]string) {
	t.Helper()
	global, flags = map[string]string{}, map[string][]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok && boolFlags[name] {
			value, ok = "true", true
		}
		switch {
		case !strings.HasPrefix(a, "--"):
			if command != "" {
				t.Fatalf("args %q: a second command %q", args, a)
			}
			command = a
		case !ok:
			t.Fatalf("args %q: write %s as --%s=VALUE", args, a, name)
		case command == "":
			global[name] = value
		default:
			flags[name] = append(flags[name], value)
		}
	}
	return global, command, flags
}

func pods(t *testing.T, m *manifests) map[string]pod {
	t.Helper()
	out := map[string]pod{}
	for _, ds := range m.daemonSets {
		p := pod{ds: ds, spec: ds.Spec.Template.Spec}
		if len(p.spec.Containers) != 1 || p.spec.Containers[0].Name != "boxer" {
			t.Fatalf("DaemonSet %s: want one container named boxer", ds.Name)
		}
		p.boxer = p.spec.Containers[0]
		p.global, p.command, p.flags = boxerArgs(t, p.boxer.Args)
		pool := ds.Spec.Template.Labels["boxer.dev/pool"]
		if _, dup := out[pool]; dup || pool == "" {
			t.Fatalf("DaemonSet %s: pool label %q missing or taken twice", ds.Name, pool)
		}
		out[pool] = p
	}
	for _, pool := range []string{"runc", "runsc"} {
		if _, ok := out[pool]; !ok {
			t.Fatalf("no DaemonSet for the %s pool", pool)
		}
	}
	return out
}

// one returns the single value of a command flag.
func (p pod) one(t *testing.T, name string) string {
	t.Helper()
	v := p.flags[name]
	if len(v) != 1 {
		t.Fatalf("DaemonSet %s: %s --%s given %d times, want once", p.ds.Name, p.command, name, len(v))
	}
	return v[0]
}

// port is serve's listening port, from --listen.
func (p pod) port(t *testing.T) int32 {
	t.Helper()
	l := p.one(t, "listen")
	i := strings.LastIndexByte(l, ':')
	n, err := strconv.Atoi(l[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("DaemonSet %s: --listen=%s has no port", p.ds.Name, l)
	}
	return int32(n)
}

// fleetPort is the port of the pod's --fleet-listen.
func (p pod) fleetPort(t *testing.T) int32 {
	t.Helper()
	l := p.one(t, "fleet-listen")
	i := strings.LastIndexByte(l, ':')
	n, err := strconv.Atoi(l[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("DaemonSet %s: --fleet-listen=%s has no port", p.ds.Name, l)
	}
	return int32(n)
}

// mountOf returns the mount of c that holds path and its volume.
func (p pod) mountOf(t *testing.T, c corev1.Container, file string) (corev1.VolumeMount, corev1.Volume) {
	t.Helper()
	var best corev1.VolumeMount
	for _, vm := range c.VolumeMounts {
		if within(file, vm.MountPath) && len(vm.MountPath) > len(best.MountPath) {
			best = vm
		}
	}
	if best.Name == "" {
		t.Fatalf("DaemonSet %s, container %s: nothing is mounted at %s", p.ds.Name, c.Name, file)
	}
	for _, v := range p.spec.Volumes {
		if v.Name == best.Name {
			return best, v
		}
	}
	t.Fatalf("DaemonSet %s: no volume %s", p.ds.Name, best.Name)
	return best, corev1.Volume{}
}

// within says whether file is dir or under it.
func within(file, dir string) bool {
	rel, err := filepath.Rel(dir, file)
	return err == nil && filepath.IsLocal(rel)
}

// hostPathAt checks that file lies in a host path mounted at the same path
// in the pod: runc, on the host, opens the paths boxer puts in its specs.
func (p pod) hostPathAt(t *testing.T, c corev1.Container, file string) (corev1.VolumeMount, corev1.Volume) {
	t.Helper()
	vm, v := p.mountOf(t, c, file)
	if v.HostPath == nil {
		t.Errorf("DaemonSet %s: %s is in volume %s, want a hostPath", p.ds.Name, file, v.Name)
		return vm, v
	}
	if v.HostPath.Path != vm.MountPath {
		t.Errorf("DaemonSet %s: host %s is mounted at %s, want the same path", p.ds.Name, v.HostPath.Path, vm.MountPath)
	}
	return vm, v
}

func TestDaemonSets(t *testing.T) {
	m := load(t, ".")
	for pool, p := range pods(t, m) {
		t.Run(pool, func(t *testing.T) {
			if p.command != "serve" {
				t.Fatalf("boxer command = %q, want serve", p.command)
			}
			spec := p.spec
			if !spec.HostPID {
				t.Errorf("hostPID = false, want true: owner labels are host pid:start time")
			}
			if spec.HostNetwork {
				t.Errorf("hostNetwork = true, want the pod network, which the NetworkPolicy governs")
			}
			if len(m.serviceAccounts) == 1 {
				sa := m.serviceAccounts[0]
				if spec.ServiceAccountName != sa.Name {
					t.Errorf("serviceAccountName = %q, want %q", spec.ServiceAccountName, sa.Name)
				}
				if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Errorf("the pod gets an API token: set automountServiceAccountToken: false")
				}
			}
			if !labels.SelectorFromSet(p.ds.Spec.Selector.MatchLabels).Matches(labels.Set(p.ds.Spec.Template.Labels)) {
				t.Errorf("selector %v does not match the template's labels %v", p.ds.Spec.Selector.MatchLabels, p.ds.Spec.Template.Labels)
			}

			// The node's containerd, in boxer's namespace only, the same for
			// setup and serve.
			containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
			for _, c := range containers {
				g, _, _ := boxerArgs(t, c.Args)
				if g["address"] != socket {
					t.Errorf("%s: --address = %q, want %s", c.Name, g["address"], socket)
				}
				if ns := g["namespace"]; ns != namespace {
					t.Errorf("%s: --namespace = %q, want %q (never k8s.io, moby or default)", c.Name, ns, namespace)
				}
				_, v := p.hostPathAt(t, c, socket)
				if v.HostPath != nil && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectory) {
					t.Errorf("%s: containerd's volume %s must be type Directory (a restarted containerd makes a new socket)", c.Name, v.Name)
				}
				if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
					t.Errorf("%s: requests = %v, want cpu and memory", c.Name, c.Resources.Requests)
				}
				if c.Resources.Limits.Memory().IsZero() {
					t.Errorf("%s: no memory limit", c.Name)
				}
				if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
					t.Errorf("%s: not privileged", c.Name)
				}
				if c.Image != p.boxer.Image {
					t.Errorf("%s: image %q, want boxer's %q", c.Name, c.Image, p.boxer.Image)
				}
			}
			if len(spec.InitContainers) != 1 {
				t.Fatalf("want one init container (boxer setup), got %d", len(spec.InitContainers))
			}
			setup := spec.InitContainers[0]
			if _, cmd, _ := boxerArgs(t, setup.Args); cmd != "setup" {
				t.Errorf("init container runs %q, want setup", cmd)
			}
			p.hostPathAt(t, setup, filepath.Join(daemon.DefaultRoot, "cache"))

			// What runc on the host must see as boxer made it.
			b := p.boxer
			p.hostPathAt(t, b, filepath.Join(runcRoot, namespace))
			p.hostPathAt(t, b, filepath.Join("/var/lib/containerd", "io.containerd.snapshotter.v1."+snapshots.Snapshotter, "snapshots"))
			p.hostPathAt(t, b, filepath.Join(cgroups.Root, "boxer"))
			vm, _ := p.hostPathAt(t, b, filepath.Join(daemon.DefaultState, "runs"))
			if vm.MountPropagation == nil || *vm.MountPropagation != corev1.MountPropagationBidirectional {
				t.Errorf("%s: mountPropagation = %v, want Bidirectional: the workspace tmpfs and netns mounts must reach the host", vm.MountPath, vm.MountPropagation)
			}
			if lease, _ := p.mountOf(t, b, leaseDir); lease.Name != vm.Name {
				t.Errorf("leases %s are in volume %s, want %s", leaseDir, lease.Name, vm.Name)
			}

			// The token comes from the Secret.
			tokenFile := p.one(t, "token-file")
			tm, tv := p.mountOf(t, b, tokenFile)
			if tv.Secret == nil {
				t.Fatalf("--token-file=%s is in volume %s, want a Secret volume", tokenFile, tv.Name)
			}
			if !tm.ReadOnly {
				t.Errorf("token mount %s is writable", tm.MountPath)
			}
			if len(m.secrets) == 1 {
				s := m.secrets[0]
				if tv.Secret.SecretName != s.Name {
					t.Errorf("token volume's secret = %q, want %q", tv.Secret.SecretName, s.Name)
				}
				rel, _ := filepath.Rel(tm.MountPath, tokenFile)
				var key string
				for _, it := range tv.Secret.Items {
					if it.Path == rel {
						key = it.Key
					}
				}
				if _, ok := s.StringData[key]; key == "" || !ok {
					t.Errorf("--token-file=%s is no key of Secret %s (items %v)", tokenFile, s.Name, tv.Secret.Items)
				}
				if len(s.StringData[key]) >= 16 {
					t.Errorf("the Secret's placeholder is %d characters: keep it under boxer's 16 so that an unreplaced one stops boxer", len(s.StringData[key]))
				}
			}

			// The port, the probes and the scrape annotations agree. The
			// probes and Prometheus send no token: --public-health.
			port := p.port(t)
			if len(b.Ports) != 2 || b.Ports[0].ContainerPort != port || b.Ports[0].Name != "http" || b.Ports[1].ContainerPort != p.fleetPort(t) || b.Ports[1].Name != "fleet" {
				t.Errorf("ports = %v, want one named http on %d and one named fleet on %d", b.Ports, port, p.fleetPort(t))
			}
			if v := p.flags["public-health"]; !slices.Equal(v, []string{"true"}) {
				t.Errorf("serve --public-health = %q, want it given once: the httpGet probes and the scrape send no token", v)
			}
			for name, pr := range map[string]*corev1.Probe{"readiness": b.ReadinessProbe, "liveness": b.LivenessProbe} {
				if pr == nil || pr.HTTPGet == nil || pr.Exec != nil || pr.TCPSocket != nil || pr.GRPC != nil {
					t.Errorf("%s probe: want an httpGet probe", name)
					continue
				}
				g := pr.HTTPGet
				// A draining member is not ready (out of the Services) but
				// alive: restarting it would end the sessions it holds.
				if want := map[string]string{"readiness": "/healthz", "liveness": "/healthz?live=1"}[name]; g.Path != want {
					t.Errorf("%s probe path = %q, want %s", name, g.Path, want)
				}
				if pp := g.Port; !(pp.Type == intstr.String && pp.StrVal == b.Ports[0].Name && b.Ports[0].ContainerPort == port) && !(pp.Type == intstr.Int && pp.IntVal == port) {
					t.Errorf("%s probe port = %s, want %d, the port of --listen (or its name)", name, pp.String(), port)
				}
				if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
					t.Errorf("%s probe scheme = %s, want HTTP", name, g.Scheme)
				}
				if g.Host != "" || len(g.HTTPHeaders) != 0 {
					t.Errorf("%s probe: host %q, headers %v: want neither (the pod's address, no token)", name, g.Host, g.HTTPHeaders)
				}
				if pr.TimeoutSeconds <= 3 {
					t.Errorf("%s probe timeout %ds: /healthz may take 3s", name, pr.TimeoutSeconds)
				}
			}
			ann := p.ds.Spec.Template.Annotations
			for k, want := range map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(int(port)), "prometheus.io/path": "/metrics"} {
				if ann[k] != want {
					t.Errorf("annotation %s = %q, want %q", k, ann[k], want)
				}
			}
			drain, err := time.ParseDuration(p.one(t, "drain-grace"))
			if err != nil {
				t.Fatalf("--drain-grace: %v", err)
			}
			if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= drain+30*time.Second {
				t.Errorf("terminationGracePeriodSeconds = %v, want more than --drain-grace's %s and --shutdown-grace's 30s", g, drain)
			}

			// A member of the fleet: the headless Service's SRV name, the
			// key from the Secret, the node's name from the downward API.
			if got, want := p.one(t, "fleet-peers"), "_fleet._tcp.boxer-peers."+namespace+".svc.cluster.local"; got != want {
				t.Errorf("--fleet-peers = %q, want %q (the fleet listener's SRV name)", got, want)
			}
			if p.fleetPort(t) == port {
				t.Errorf("--fleet-listen is --listen's port %d: the fleet listener is a port of its own", port)
			}
			keyFile := p.one(t, "fleet-key-file")
			if km, kv := p.mountOf(t, b, keyFile); kv.Secret == nil || !km.ReadOnly {
				t.Errorf("--fleet-key-file=%s: want a read-only Secret volume", keyFile)
			} else if len(m.secrets) == 1 {
				rel, _ := filepath.Rel(km.MountPath, keyFile)
				found := false
				for _, it := range kv.Secret.Items {
					if it.Path == rel {
						_, found = m.secrets[0].StringData[it.Key]
					}
				}
				if !found {
					t.Errorf("--fleet-key-file=%s is no key of Secret %s", keyFile, m.secrets[0].Name)
				}
			}
			nodeName := false
			for _, e := range b.Env {
				if e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
					nodeName = true
				}
			}
			if !nodeName {
				t.Errorf("env NODE_NAME from spec.nodeName missing: a session's ID names its node")
			}
		})
	}
}

// TestPools: the runsc pool's nodes are the labelled ones, the runc pool's
// all others, and only the runsc pool has runsc and warms runsc sandboxes.
func TestPools(t *testing.T) {
	m := load(t, ".")
	ps := pods(t, m)
	runc, runsc := ps["runc"], ps["runsc"]

	if got := runsc.spec.NodeSelector[runscLabel]; got != "true" {
		t.Errorf("runsc pool nodeSelector %s = %q, want \"true\"", runscLabel, got)
	}
	excluded := false
	if a := runc.spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == runscLabel && e.Operator == corev1.NodeSelectorOpNotIn && slices.Contains(e.Values, "true") {
					excluded = true
				}
			}
		}
	}
	if !excluded {
		t.Errorf("the runc pool does not keep off %s=true nodes: two boxers would share a node", runscLabel)
	}

	warm := func(p pod) []string {
		var out []string
		for _, v := range p.flags["warm"] {
			out = append(out, strings.Split(v, ",")...)
		}
		return out
	}
	for _, w := range warm(runc) {
		if strings.Contains(w, ":runsc") {
			t.Errorf("runc pool warms %q: runsc is not on its nodes", w)
		}
	}
	ws := warm(runsc)
	if len(ws) == 0 {
		t.Errorf("runsc pool warms nothing")
	}
	for _, w := range ws {
		if !strings.Contains(w, ":runsc") {
			t.Errorf("runsc pool warms %q on runc, want LANG:runsc", w)
		}
	}
	// Each pool's default runtime is its own: a request that names none
	// runs on runsc in the runsc pool.
	for _, c := range []struct {
		p    pod
		want string
	}{{runc, "runc"}, {runsc, "runsc"}} {
		if got := c.p.one(t, "runtime"); got != c.want {
			t.Errorf("DaemonSet %s: serve --runtime=%s, want %s", c.p.ds.Name, got, c.want)
		}
	}

	runscBin := path.Join(daemon.LibexecDir, "runsc")
	vm, v := runsc.hostPathAt(t, runsc.boxer, runscBin)
	if !vm.ReadOnly {
		t.Errorf("%s is mounted writable", vm.MountPath)
	}
	if v.HostPath != nil && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectory) {
		t.Errorf("%s: want type Directory, so a node without runsc fails visibly", v.HostPath.Path)
	}
}

// TestServicesAndPolicy: one Service per pool on serve's port, with no
// stickiness (the fleet forwards a session's calls to its node); the
// headless peers Service of --fleet-peers over both pools on the fleet
// port, listing pods that are not ready (a draining one still answers for
// its sessions); and a NetworkPolicy that covers every boxer pod, lets
// clients in on serve's port and only the other members on the fleet
// port.
func TestServicesAndPolicy(t *testing.T) {
	m := load(t, ".")
	ps := pods(t, m)
	for pool, p := range ps {
		podLabels := labels.Set(p.ds.Spec.Template.Labels)
		var found int
		for _, s := range m.services {
			if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
				continue
			}
			if s.Name == "boxer-peers" {
				if s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses {
					t.Errorf("Service boxer-peers: clusterIP %q, publishNotReadyAddresses %v: want a headless Service listing pods that are not ready", s.Spec.ClusterIP, s.Spec.PublishNotReadyAddresses)
				}
				if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "fleet" || s.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
					s.Spec.Ports[0].Port != p.fleetPort(t) || (s.Spec.Ports[0].TargetPort.String() != "fleet" && s.Spec.Ports[0].TargetPort.IntVal != p.fleetPort(t)) {
					t.Errorf("Service boxer-peers ports %v: want one named fleet (the SRV name _fleet._tcp) on the fleet port %d", s.Spec.Ports, p.fleetPort(t))
				}
				continue
			}
			found++
			// No stickiness: any pod answers any call (docs/fleet.md).
			if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
				t.Errorf("Service %s: sessionAffinity ClientIP: the fleet routes sessions itself, and stickiness only piles clients behind one NAT onto one node", s.Name)
			}
			for _, sp := range s.Spec.Ports {
				if sp.TargetPort.String() != "http" && sp.TargetPort.IntVal != p.port(t) {
					t.Errorf("Service %s targets %s, want the http port %d", s.Name, sp.TargetPort.String(), p.port(t))
				}
			}
			for _, other := range ps {
				if other.ds != p.ds && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(other.ds.Spec.Template.Labels)) {
					t.Errorf("Service %s selects both pools", s.Name)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s pool: %d Services select it, want 1", pool, found)
		}
		if len(m.policies) != 1 {
			continue
		}
		np := m.policies[0]
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			t.Errorf("NetworkPolicy %s does not select the %s pool's pods (%v)", np.Name, pool, err)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("NetworkPolicy policyTypes = %v, want Ingress and Egress", np.Spec.PolicyTypes)
		}
		open := false
		for _, r := range np.Spec.Ingress {
			for _, rp := range r.Ports {
				if rp.Port != nil && rp.Port.IntVal == p.port(t) && len(r.From) > 0 {
					open = true
				}
			}
		}
		if !open {
			t.Errorf("NetworkPolicy lets no client in on port %d", p.port(t))
		}
		// The members reach each other on the fleet port, and only they
		// are let in on it.
		isBoxer := func(pod *metav1.LabelSelector, ns *metav1.LabelSelector) bool {
			return ns == nil && pod != nil && pod.MatchLabels["app.kubernetes.io/name"] == "boxer"
		}
		onFleetPort := func(ports []networkingv1.NetworkPolicyPort) bool {
			for _, rp := range ports {
				if rp.Port != nil && rp.Port.IntVal == p.fleetPort(t) {
					return true
				}
			}
			return false
		}
		peersIn, peersOut := false, false
		for _, r := range np.Spec.Ingress {
			for _, from := range r.From {
				if isBoxer(from.PodSelector, from.NamespaceSelector) && onFleetPort(r.Ports) {
					peersIn = true
				}
				if !isBoxer(from.PodSelector, from.NamespaceSelector) && (onFleetPort(r.Ports) || len(r.Ports) == 0) {
					t.Errorf("NetworkPolicy lets %v in on the fleet port %d: only boxer's pods use it", from, p.fleetPort(t))
				}
			}
		}
		for _, r := range np.Spec.Egress {
			for _, to := range r.To {
				if isBoxer(to.PodSelector, to.NamespaceSelector) && onFleetPort(r.Ports) {
					peersOut = true
				}
			}
		}
		if !peersIn || !peersOut {
			t.Errorf("NetworkPolicy: boxer pods to boxer pods on the fleet port %d in %v, out %v: the fleet's members forward calls to each other there", p.fleetPort(t), peersIn, peersOut)
		}
		for _, r := range np.Spec.Egress {
			for _, to := range r.To {
				if to.IPBlock != nil && !slices.Contains(to.IPBlock.Except, "169.254.0.0/16") {
					t.Errorf("egress to %s includes the cloud metadata address", to.IPBlock.CIDR)
				}
			}
		}
	}
}
