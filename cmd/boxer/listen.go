package main

// Listening on a local address a user gave: a port in use names a free one.

import (
	"net"
	"strconv"
)

// freePortNear is addr with the first of the next few ports that can be
// listened on now, or "".
func freePortNear(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 {
		return ""
	}
	for next := p + 1; next <= p+20 && next < 65536; next++ {
		try := net.JoinHostPort(host, strconv.Itoa(next))
		if ln, err := net.Listen("tcp", try); err == nil {
			ln.Close()
			return try
		}
	}
	return ""
}
