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

	"github.com/boxer-dev/boxer/reaper"
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

// standbyOrder is what boxer run hands its standby maker: the request
// whose shape to make, and the run's own sandbox to remove first (the run
// exits without waiting for its removal). Lock says that the maker's
// file 3 is its shape's maker lock (runner.StandbyMakerLock), which it
// holds until the standby is made.
type standbyOrder struct {
	Request runner.Request `json:"request"`
	Owner   string         `json:"owner,omitempty"`
	Remove  []string       `json:"remove,omitempty"`
	Lock    bool           `json:"lock,omitempty"`
}

// makerLockFD is the maker lock's file in the maker (ExtraFiles' first).
const makerLockFD = 3

// leaveStandby starts the detached process that removes the sandboxes r's
// runs handed off and makes a standby shaped like req, unless a standby
// of that shape waits or another maker is making one: then this process
// removes them (Close), as a cold run does. It does not wait for the
// maker: a failure to start it only means that this process removes
// them, and that the next run makes its own sandbox.
func leaveStandby(c *cli.Context, req runner.Request, r *runner.Runner) {
	lock := r.StandbyMakerLock(c.Context, req)
	if lock == nil {
		return
	}
	defer lock.Close()
	owner, ids := r.TakeHandedOff()
	maker := startStandbyMaker(c, standbyOrder{Request: runner.StandbyRequest(req), Owner: owner, Remove: ids, Lock: true}, lock)
	if maker == 0 {
		r.RemoveSandboxes(c.Context, owner, ids)
		return
	}
	// Other boxer commands' reapers leave them to the maker, though this
	// process, which their labels name, is about to be gone.
	if m := reaper.OwnerOf(maker); m != "" {
		r.HandTo(m, ids)
	}
}

// startStandbyMaker starts `boxer standby` with order and the maker lock,
// and returns its PID (0: it did not).
func startStandbyMaker(c *cli.Context, order standbyOrder, lock *os.File) int {
	if !runner.StandbyEligible(order.Request) {
		return 0
	}
	data, err := json.Marshal(order)
	if err != nil {
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		return 0
	}
	args := []string{"--namespace", c.String("namespace")}
	if a := c.String("address"); a != "" {
		args = append(args, "--address", a)
	}
	if c.Bool("debug") {
		args = append(args, "--debug")
	}
	// The standby is made as the run's sandbox was: a run takes only a
	// standby of its own user namespace setting.
	if o, err := usernsOptions(c); err == nil {
		if o.Host {
			args = append(args, "--userns", "host")
		}
		args = append(args, "--userns-range", o.Range)
	}
	// The order goes through a pipe whose buffer holds it whole: written
	// before the child reads, with nothing left to copy when boxer exits.
	if len(data) > 60<<10 {
		return 0
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0
	}
	defer pr.Close()
	_, err = pw.Write(data)
	pw.Close()
	if err != nil {
		return 0
	}
	cmd := exec.Command(self, append(args, "standby")...)
	// Its own session: a Ctrl-C in the caller's terminal or the end of
	// the caller's process group is not the standby's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = pr
	cmd.ExtraFiles = []*os.File{lock}
	if err := cmd.Start(); err != nil {
		log.L.WithError(err).Debug("leaving a standby")
		return 0
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid
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
	var order standbyOrder
	if err := json.Unmarshal(data, &order); err != nil {
		return fail("standby: bad request: %v", err)
	}
	// The maker lock goes once the standby is made (or is not): the
	// next run of the shape finds the standby, or starts a maker. On an
	// early return, it goes with this process.
	var lock *os.File
	if order.Lock {
		lock = os.NewFile(makerLockFD, "standby maker lock")
	}
	req := order.Request
	idle := runner.DefaultStandbyIdle
	if v := os.Getenv(standbyIdleEnv); v != "" {
		if idle, err = time.ParseDuration(v); err != nil || idle <= 0 {
			return fail("%s=%s: want a duration such as 2m", standbyIdleEnv, v)
		}
	}
	// The run's own sandbox first, whatever signal comes: it holds memory
	// and pids until gone, and its run is already over.
	ctx := c.Context
	c.Context = context.WithoutCancel(ctx)
	r, err := connect(c, io.Discard, false)
	if err != nil {
		return err
	}
	r.RemoveSandboxes(c.Context, order.Owner, order.Remove)
	if c.Context = ctx; ctx.Err() != nil {
		r.Close()
		return nil
	}
	id, until, err := r.MakeStandby(ctx, req, idle)
	r.Close()
	if lock != nil {
		lock.Close()
	}
	if err != nil {
		return fail("standby: %v", err)
	}
	if id == "" {
		return nil
	}
	// Sleep with no connection open until a run claims it (then this
	// process has nothing left to do), or until its expiry: then remove
	// it unless a run took it.
	claimed, err := r.WaitStandby(c.Context, id, until)
	if err != nil {
		log.L.WithError(err).Debug("waiting for a run to claim the standby")
		t := time.NewTimer(time.Until(until))
		select {
		case <-t.C:
		case <-c.Context.Done():
		}
	}
	if claimed {
		return nil
	}
	ctx = context.WithoutCancel(c.Context)
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
