package secrets

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Masker replaces every occurrence of a secret's value in what is written
// through it with "[secret:NAME]" before passing it on to dst.
//
// A value split across writes is masked too: a Masker holds back the end of
// a write while it may be the start of a value (at most the longest value's
// length less one byte) and passes everything before it on at once. Call
// Flush when the stream ends. The package doc lists what masking misses.
//
// A Masker is safe for concurrent use.
type Masker struct {
	mu       sync.Mutex
	dst      io.Writer
	patterns []pattern
	// byFirst lists, for each byte, the patterns that start with it,
	// longest first.
	byFirst [256][]*pattern
	starts  [256]bool // whether any pattern starts with the byte
	maxLen  int
	held    []byte // the end of the stream that may start a pattern
	scratch []byte // reused for the masked output of a write
	err     error  // dst's first error; every later call returns it
}

// pattern is what a Masker looks for and what it writes instead.
type pattern struct {
	name  string
	value []byte
	mask  []byte
}

// NewMasker returns a Masker that writes to dst. Each secret's pattern is
// its value without trailing "\r" and "\n"; a value that is only line ends
// is not masked. When two secrets share a value, the first by name is the
// one shown.
func NewMasker(dst io.Writer, secrets []Named) *Masker {
	m := &Masker{dst: dst}
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b Named) int { return strings.Compare(a.Name, b.Name) })
	seen := make(map[string]bool)
	for _, s := range sorted {
		v := bytes.TrimRight(s.Value, "\r\n")
		if len(v) == 0 || seen[string(v)] {
			continue
		}
		seen[string(v)] = true
		m.patterns = append(m.patterns, pattern{name: s.Name, value: bytes.Clone(v), mask: []byte("[secret:" + s.Name + "]")})
	}
	// Longest first, so that at any position the longest match wins.
	slices.SortStableFunc(m.patterns, func(a, b pattern) int { return cmp.Compare(len(b.value), len(a.value)) })
	for i := range m.patterns {
		p := &m.patterns[i]
		m.byFirst[p.value[0]] = append(m.byFirst[p.value[0]], p)
		m.starts[p.value[0]] = true
		m.maxLen = max(m.maxLen, len(p.value))
	}
	return m
}

// Write masks p and writes what is decided to dst, holding back a tail of
// the stream that may be the start of a value. It returns len(p) unless
// dst failed.
func (m *Masker) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return 0, m.err
	}
	if len(m.patterns) == 0 {
		n, err := m.dst.Write(p)
		m.err = err
		return n, err
	}
	data := p
	if len(m.held) > 0 {
		m.held = append(m.held, p...)
		data = m.held
	}
	out, keep := m.mask(data, false /* final */)
	if err := m.write(out); err != nil {
		return 0, err
	}
	m.hold(data[keep:])
	return len(p), nil
}

// Flush masks and writes what the Masker holds back. Call it when the
// stream ends: a partial value at the very end is written as it is.
func (m *Masker) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	out, _ := m.mask(m.held, true /* final */)
	err := m.write(out)
	m.held = m.held[:0]
	return err
}

// mask scans data left to right and returns it masked up to keep, the
// start of the tail that may still become a value; when final, nothing
// more comes, so nothing is kept. out aliases data when nothing matched.
func (m *Masker) mask(data []byte, final bool) (out []byte, keep int) {
	var masked []byte // nil until the first match
	done := 0         // data[:done] is in masked
	for i := 0; i < len(data); {
		if !m.starts[data[i]] {
			i++
			continue
		}
		p, partial := match(m.byFirst[data[i]], data[i:], final)
		switch {
		case partial:
			return m.done(masked, data[done:i]), i
		case p == nil:
			i++
		default:
			if masked == nil {
				masked = m.scratch[:0]
			}
			masked = append(masked, data[done:i]...)
			masked = append(masked, p.mask...)
			i += len(p.value)
			done = i
		}
	}
	return m.done(masked, data[done:]), len(data)
}

// match returns the longest of cands (sorted longest first) that rest
// starts with. partial is true when rest is a proper prefix of a pattern
// longer than any that matches, so more bytes must come before deciding;
// when final, no more come and a partial pattern does not match.
func match(cands []*pattern, rest []byte, final bool) (p *pattern, partial bool) {
	for _, c := range cands {
		if len(rest) >= len(c.value) {
			if bytes.HasPrefix(rest, c.value) {
				return c, false
			}
		} else if !final && bytes.HasPrefix(c.value, rest) {
			return nil, true
		}
	}
	return nil, false
}

// maxScratch is the largest buffer a Masker keeps for the next write's
// masked output.
const maxScratch = 256 << 10

// done returns masked with tail appended, or tail itself when nothing was
// masked (no copy), and keeps masked's buffer for the next write.
func (m *Masker) done(masked, tail []byte) []byte {
	if masked == nil {
		return tail
	}
	masked = append(masked, tail...)
	if cap(masked) <= maxScratch {
		m.scratch = masked[:0]
	}
	return masked
}

// write writes b to dst, remembering a failure.
func (m *Masker) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := m.dst.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	m.err = err
	return err
}

// hold keeps tail (which may alias m.held) for the next write, in a buffer
// no larger than a few patterns once a large write has passed through it.
func (m *Masker) hold(tail []byte) {
	m.held = append(m.held[:0], tail...)
	if cap(m.held) > 4*m.maxLen+4096 {
		m.held = bytes.Clone(m.held)
	}
}

// String names the secrets the Masker masks, never their values.
func (m *Masker) String() string {
	names := make([]string, len(m.patterns))
	for i, p := range m.patterns {
		names[i] = p.name
	}
	if len(names) == 0 {
		return "masker of no secrets"
	}
	slices.Sort(names)
	return "masker of secrets " + strings.Join(names, ", ")
}

// Format prints m as String does, whatever the verb.
func (m *Masker) Format(f fmt.State, verb rune) { io.WriteString(f, m.String()) }
