package fleet

import "net/http"

// Capture is a ResponseWriter that keeps the answer, for a list that is
// merged with the peers' before it is sent.
type Capture struct {
	header http.Header
	Code   int
	Body   []byte
}

// Header is the answer's header.
func (c *Capture) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}

// WriteHeader keeps the first code.
func (c *Capture) WriteHeader(code int) {
	if c.Code == 0 {
		c.Code = code
	}
}

// Write keeps b.
func (c *Capture) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	c.Body = append(c.Body, b...)
	return len(b), nil
}

// CopyTo sends the kept answer to w as it was.
func (c *Capture) CopyTo(w http.ResponseWriter) {
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.Code)
	_, _ = w.Write(c.Body)
}
