package contract

import (
	"path"
	"strings"

	"github.com/boxer-dev/boxer/oci"
)

// FieldPreload is a request's preload setting: the modules its sandbox
// imports when made ahead (Request.Preload), or the opt-out.
const FieldPreload = "preload"

// PreloadDir holds the hook (as sitecustomize.py) and the module list, in
// the read-only code directory; first on PYTHONPATH until the hook takes it
// off (preload_linux.go).
const PreloadDir = ".boxer-preload"

// maxPreload bounds the modules of one preload list.
const maxPreload = 64

// Preloads are an operator's preload lists by language (serve's and run's
// --preload): a language missing keeps its preset's list, an empty list
// turns preloading off for it.
type Preloads map[string][]string

// For returns the modules a pre-created sandbox of lang imports: the
// operator's list, else the preset's; nil for a language that cannot be
// preloaded.
func (p Preloads) For(lang string) []string {
	if !Preloadable(lang) {
		return nil
	}
	if mods, ok := p[lang]; ok {
		return mods
	}
	pr, _ := LookupPreset(lang)
	return pr.Preload
}

// Preloadable says whether lang's interpreter can be preloaded: Python's
// presets, whose interpreter imports a hook as it starts (see
// preload_hook.py).
func Preloadable(lang string) bool {
	p, err := LookupPreset(lang)
	return err == nil && len(p.Command) > 0 && p.Command[0] == "python3"
}

// ParsePreloads reads --preload entries, LANG=MODULE,MODULE ("LANG=" for
// none), into Preloads.
func ParsePreloads(entries []string) (Preloads, error) {
	out := Preloads{}
	for _, e := range entries {
		lang, list, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || lang == "" {
			return nil, FieldErr(FieldPreload, "%q must be LANG=MODULE,MODULE (LANG= for none)", e)
		}
		if _, err := LookupPreset(lang); err != nil {
			return nil, FieldErr(FieldPreload, "%q names unknown language %q: use one of %s", e, lang, strings.Join(PresetNames(), ", "))
		}
		if !Preloadable(lang) {
			return nil, FieldErr(FieldPreload, "%q: %s's interpreter cannot be preloaded (only python's can)", e, lang)
		}
		mods := []string{}
		for _, m := range strings.Split(list, ",") {
			if m = strings.TrimSpace(m); m != "" {
				mods = append(mods, m)
			}
		}
		if err := checkModules(mods); err != nil {
			return nil, err
		}
		out[lang] = mods
	}
	return out, nil
}

// checkModules refuses what is not a list of Python module names (dotted
// identifiers), which the hook imports one by one.
func checkModules(mods []string) error {
	if len(mods) > maxPreload {
		return FieldErr(FieldPreload, "names %d modules, more than %d", len(mods), maxPreload)
	}
	for _, m := range mods {
		for _, part := range strings.Split(m, ".") {
			if !identifier(part) {
				return FieldErr(FieldPreload, "%q is not a Python module name (like numpy or matplotlib.pyplot)", m)
			}
		}
	}
	return nil
}

// identifier says whether s is an ASCII Python identifier.
func identifier(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkPreload: preloading is for Python's presets, with module names.
func (r Request) checkPreload() error {
	if len(r.Preload) == 0 {
		return nil
	}
	if !Preloadable(r.Lang) {
		return FieldErr(FieldPreload, "is for python's presets ({lang} python or python-data): only their interpreter can be preloaded")
	}
	return checkModules(r.Preload)
}

// WithPreloadPath puts the hook's directory first on env's PYTHONPATH.
func WithPreloadPath(env []string) []string {
	dir := path.Join(oci.CodeDir, PreloadDir)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			out := append([]string(nil), env...)
			if v == "" {
				out[i] = "PYTHONPATH=" + dir
			} else {
				out[i] = "PYTHONPATH=" + dir + ":" + v
			}
			return out
		}
	}
	return append(append([]string(nil), env...), "PYTHONPATH="+dir)
}
