package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

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
			// Listen first: a port in use is said before containerd is
			// asked anything.
			ln, err := listenForward(c.String("listen"))
			if err != nil {
				return err
			}
			defer ln.Close()
			r, err := connect(c, os.Stderr, true)
			if err != nil {
				return err
			}
			defer r.Close()
			if err := r.CheckSession(c.Context, id, ""); err != nil {
				return processError(id, err)
			}
			fmt.Println(ln.Addr())
			ended := make(chan error, 1)
			end := func(err error) {
				select {
				case ended <- err:
				default:
				}
				ln.Close()
			}
			go func() {
				<-c.Context.Done()
				end(nil)
			}()
			go watchSession(c.Context, r, id, end)
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						end(nil)
						return
					}
					go func() {
						up, err := r.DialPort(c.Context, id, "", port)
						if err != nil {
							conn.Close()
							if errors.Is(err, runner.ErrSessionNotFound) {
								end(err)
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
				return portEnded(id, err)
			}
			return &exitError{code: interruptedCode(), msg: "stopped forwarding"}
		},
	}
}

// sessionCheckEvery is how often a forward asks whether its session is
// still there: a forward of a removed session stops within it.
const sessionCheckEvery = time.Second

// watchSession calls end once session id is gone (removed, expired, its
// sandbox ended), or when ctx is done. A paused session is still there.
func watchSession(ctx context.Context, r *runner.Runner, id string, end func(error)) {
	t := time.NewTicker(sessionCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.CheckSession(ctx, id, ""); errors.Is(err, runner.ErrSessionNotFound) {
			end(err)
			return
		}
	}
}

// portEnded says why a forward stopped when its session went away.
func portEnded(id string, err error) error {
	var ended *runner.SessionEndedError
	if errors.As(err, &ended) {
		return fail("session %s has ended (%s): stopped forwarding", id, runner.EndText(ended.Reason))
	}
	return fail("session %s is gone (removed with 'boxer session rm' or ended): stopped forwarding", id)
}

// listenForward listens on addr for 'session port'; an address in use is
// one line naming a port that is free now.
func listenForward(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if free := freePortNear(addr); free != "" {
			return nil, fail("--listen %s: address is in use: pick another, e.g. --listen %s (or --listen 127.0.0.1:0 for any free port)", addr, free)
		}
		return nil, fail("--listen %s: address is in use: pick another, or --listen 127.0.0.1:0 for any free port", addr)
	}
	if err != nil {
		return nil, fail("--listen %s: %v", addr, err)
	}
	return ln, nil
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
