package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/boxer-dev/boxer/runner"
	"github.com/urfave/cli/v2"
)

func sessionPortCommand() *cli.Command {
	return &cli.Command{
		Name:  "port",
		Usage: "forward a local TCP port to a port a program listens on inside a session",
		Description: `boxer listens on --listen (127.0.0.1 and a free port by default), prints
the address it listens on, and connects each connection made to it to
PORT on the session's loopback, as a program inside the session would: a
port of the host's is never reached. It forwards until Ctrl-C, or until
the session ends.`,
		ArgsUsage:    "ID PORT",
		OnUsageError: usageError,
		Flags:        []cli.Flag{&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "the local `ADDRESS:PORT` to listen on"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fail("session port needs a session ID and a port (see '%s --help')", commandPath(c))
			}
			id := c.Args().First()
			port, err := strconv.Atoi(c.Args().Get(1))
			if err != nil || port < 1 || port > 65535 {
				return fail("PORT must be a TCP port from 1 to 65535, not %q", c.Args().Get(1))
			}
			if _, err := net.ResolveTCPAddr("tcp", c.String("listen")); err != nil {
				return fail("--listen must be ADDRESS:PORT, such as 127.0.0.1:8080: %v", err)
			}
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := r.CheckSession(c.Context, id, ""); err != nil {
				return processError(id, err)
			}
			ln, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return fail("--listen: %v", err)
			}
			defer ln.Close()
			fmt.Println(ln.Addr())
			ended := make(chan error, 1)
			go func() {
				<-c.Context.Done()
				ln.Close()
			}()
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						select {
						case ended <- nil:
						default:
						}
						return
					}
					go func() {
						up, err := r.DialPort(c.Context, id, "", port)
						if err != nil {
							conn.Close()
							if errors.Is(err, runner.ErrSessionNotFound) || errors.As(err, new(*runner.SessionEndedError)) {
								select {
								case ended <- err:
								default:
								}
								ln.Close()
								return
							}
							fmt.Fprintf(os.Stderr, "boxer: %v\n", err)
							return
						}
						splice(conn, up)
					}()
				}
			}()
			if err := <-ended; err != nil {
				return processError(id, err)
			}
			return &exitError{code: interruptedCode(), msg: "stopped forwarding"}
		},
	}
}

// splice copies a and b into each other until both directions end, then
// closes both.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
