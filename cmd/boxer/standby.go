package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/boxer-dev/boxer/runner"
	"github.com/containerd/log"
	"github.com/urfave/cli/v2"
)

// A CLI run leaves a standby sandbox of its shape for the next run
// (docs/reference.md, "Standby sandboxes"), made by a detached boxer
// process after the caller has its result: `boxer standby`, which is not
// for people to call.

// standbyEnv turns standbys off with 0 (or false, off, no).
const standbyEnv = "BOXER_STANDBY"

// standbyIdleEnv sets how long a standby waits for a run (a Go duration).
const standbyIdleEnv = "BOXER_STANDBY_IDLE"

// standbyOn says whether run uses and leaves standbys.
func standbyOn(c *cli.Context) bool {
	if c.Bool("no-standby") {
		return false
	}
	switch strings.ToLower(os.Getenv(standbyEnv)) {
	case "0", "false", "off", "no":
		return false
	}
	return true
}

// leaveStandby starts the detached process that makes a standby shaped
// like req. It does not wait for it: a failure only means the next run
// makes its own sandbox.
func leaveStandby(c *cli.Context, req runner.Request) {
	if !runner.StandbyEligible(req) {
		return
	}
	data, err := json.Marshal(runner.StandbyRequest(req))
	if err != nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	args := []string{"--namespace", c.String("namespace")}
	if a := c.String("address"); a != "" {
		args = append(args, "--address", a)
	}
	if c.Bool("debug") {
		args = append(args, "--debug")
	}
	// The request goes through a pipe whose buffer holds it whole: written
	// before the child reads, with nothing left to copy when boxer exits.
	if len(data) > 60<<10 {
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return
	}
	defer pr.Close()
	_, err = pw.Write(data)
	pw.Close()
	if err != nil {
		return
	}
	cmd := exec.Command(self, append(args, "standby")...)
	// Its own session: a Ctrl-C in the caller's terminal or the end of
	// the caller's process group is not the standby's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		log.L.WithError(err).Debug("leaving a standby")
		return
	}
	_ = cmd.Process.Release()
}

func standbyCommand() *cli.Command {
	return &cli.Command{
		Name:   "standby",
		Hidden: true,
		Usage:  "make a standby sandbox for the next run of a shape (boxer run starts it)",
		Action: standbyAction,
	}
}

func standbyAction(c *cli.Context) error {
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxCode))
	if err != nil {
		return fail("standby: reading the request: %v", err)
	}
	var req runner.Request
	if err := json.Unmarshal(data, &req); err != nil {
		return fail("standby: bad request: %v", err)
	}
	idle := runner.DefaultStandbyIdle
	if v := os.Getenv(standbyIdleEnv); v != "" {
		if idle, err = time.ParseDuration(v); err != nil || idle <= 0 {
			return fail("%s=%s: want a duration such as 2m", standbyIdleEnv, v)
		}
	}
	r, err := connect(c, io.Discard, false)
	if err != nil {
		return err
	}
	id, until, err := r.MakeStandby(c.Context, req, idle)
	r.Close()
	if err != nil {
		return fail("standby: %v", err)
	}
	if id == "" {
		return nil
	}
	// Sleep with no connection open, then remove it unless a run took it.
	t := time.NewTimer(time.Until(until))
	select {
	case <-t.C:
	case <-c.Context.Done():
	}
	ctx := context.WithoutCancel(c.Context)
	c.Context = ctx
	r, err = connect(c, io.Discard, false)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.ExpireStandby(ctx, id); err != nil {
		return fmt.Errorf("removing standby %s: %w", id, err)
	}
	return nil
}
