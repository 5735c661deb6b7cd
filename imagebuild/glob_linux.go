package imagebuild

// Wildcards in COPY and ADD sources, as Docker takes them: each source
// with *, ? or [ is the context's paths it matches (path.Match, a
// component at a time), sorted; the matches are copied into the
// destination as a directory, as Docker copies several sources.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// maxMatches bounds what one wildcard source may name.
const maxMatches = 10000

// isWildcard says whether a source is a pattern.
func isWildcard(src string) bool { return strings.ContainsAny(src, "*?[") }

// expandSources replaces each wildcard source by the paths of the context
// it matches, found inside the context only (os.Root: a symlink out of it
// is not followed while matching, and walkSources refuses it later
// anyway); wild says whether there was one. A pattern that matches
// nothing is an error, as in Docker.
func expandSources(contextDir string, srcs []string) (out []string, wild bool, err error) {
	var root *os.Root
	for _, src := range srcs {
		if !isWildcard(src) {
			out = append(out, src)
			continue
		}
		wild = true
		if root == nil {
			if root, err = os.OpenRoot(contextDir); err != nil {
				return nil, false, fmt.Errorf("opening the build context: %w", err)
			}
			defer root.Close()
		}
		pattern := strings.TrimPrefix(path.Clean("/"+src), "/")
		if pattern == "" || strings.Split(path.Clean(src), "/")[0] == ".." {
			return nil, false, fmt.Errorf("COPY source %s: %w", src, ErrOutsideContext)
		}
		matches, err := fs.Glob(root.FS(), pattern)
		if errors.Is(err, path.ErrBadPattern) {
			return nil, false, fmt.Errorf("COPY source %s: not a valid pattern", src)
		}
		if err != nil {
			return nil, false, fmt.Errorf("COPY source %s: %w", src, err)
		}
		if len(matches) == 0 {
			return nil, false, fmt.Errorf("COPY source %s: no file of the build context matches it", src)
		}
		if len(out)+len(matches) > maxMatches {
			return nil, false, fmt.Errorf("COPY source %s: matches more than %d paths: name fewer", src, maxMatches)
		}
		out = append(out, matches...)
	}
	return out, wild, nil
}
