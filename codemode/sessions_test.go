package codemode_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/tool"
)

// gate is a tool that blocks until released, to hold a cell running.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) tool() tool.Tool {
	return tool.MustFunc(tool.FuncConfig{Name: "wait_gate", Description: "Blocks until the test releases it."},
		func(ctx context.Context, _ struct{}) (string, error) {
			g.entered <- struct{}{}
			select {
			case <-g.release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
}

// holdBusy starts a cell in session that blocks in the gate, and returns
// once it is running; the returned channel yields its Cell.
func holdBusy(t *testing.T, cm *codemode.CodeMode, g *gate, session string) <-chan codemode.Cell {
	t.Helper()
	out := make(chan codemode.Cell, 1)
	go func() {
		c, err := cm.Run(context.Background(), session, "", `await wait_gate()`)
		if err != nil {
			t.Errorf("busy cell: %v", err)
		}
		out <- c
	}()
	<-g.entered
	return out
}

func TestSessions_BusyPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     codemode.Config
		release time.Duration // release the running cell after this long
		wantErr error
	}{
		{"refuse answers at once", codemode.Config{Busy: codemode.BusyRefuse, BusyWait: time.Hour}, time.Hour, codemode.ErrBusy},
		{"wait gives up after BusyWait", codemode.Config{Busy: codemode.BusyWait, BusyWait: 30 * time.Millisecond}, time.Hour, codemode.ErrBusy},
		{"wait runs once the cell ends", codemode.Config{Busy: codemode.BusyWait, BusyWait: time.Minute}, 20 * time.Millisecond, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			tt.cfg.Tools = []tool.Tool{g.tool()}
			cm := newCM(t, tt.cfg)
			first := holdBusy(t, cm, g, "s")
			timer := time.AfterFunc(tt.release, func() { close(g.release) })
			defer timer.Stop()
			c, err := cm.Run(context.Background(), "s", "", "'second'")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("second cell: err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && resultOf(t, c) != "second" {
				t.Fatalf("second cell: %s", c.JSON())
			}
			if other, err := cm.Run(context.Background(), "other", "", "1"); err != nil || other.Status != codemode.StatusOK {
				t.Fatalf("another session while s is busy: %v %s", err, other.JSON())
			}
			if timer.Stop() {
				close(g.release)
			}
			if c := <-first; resultOf(t, c) != "released" {
				t.Fatalf("first cell: %s", c.JSON())
			}
		})
	}
}

func TestSessions_LeastRecentlyUsedIsEvictedPastMaxKernels(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{MaxKernels: 2})
	runCell(t, cm, "a", "let v = 'a'")
	runCell(t, cm, "b", "let v = 'b'")
	runCell(t, cm, "a", "v") // a is now more recent than b
	runCell(t, cm, "c", "let v = 'c'")
	if n := cm.Sessions(); n != 2 {
		t.Fatalf("%d interpreters held, want 2", n)
	}
	if c := runCell(t, cm, "a", "v"); resultOf(t, c) != "a" {
		t.Fatalf("a was evicted instead of b: %s", c.JSON())
	}
	c := runCell(t, cm, "b", "typeof v")
	if resultOf(t, c) != "undefined" || !strings.Contains(c.Notice, "evicted") {
		t.Fatalf("b: %s, want a fresh environment with a notice", c.JSON())
	}
}

func TestSessions_AllBusyRefusesANewSession(t *testing.T) {
	t.Parallel()
	g := newGate()
	cm := newCM(t, codemode.Config{MaxKernels: 1, Tools: []tool.Tool{g.tool()}})
	first := holdBusy(t, cm, g, "a")
	if _, err := cm.Run(context.Background(), "b", "", "1"); !errors.Is(err, codemode.ErrTooManyKernels) {
		t.Fatalf("err = %v, want ErrTooManyKernels", err)
	}
	close(g.release)
	<-first
	if c := runCell(t, cm, "b", "1"); c.Status != codemode.StatusOK {
		t.Fatalf("after the busy one ended: %s", c.JSON())
	}
}

func TestSessions_IdleInterpreterIsEvicted(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{IdleTTL: 20 * time.Millisecond})
	runCell(t, cm, "s", "let kept = 1")
	waitFor(t, "the idle interpreter to be evicted", func() bool { return cm.Sessions() == 0 })
	c := runCell(t, cm, "s", "typeof kept")
	if resultOf(t, c) != "undefined" || !strings.Contains(c.Notice, "evicted") {
		t.Fatalf("after eviction: %s", c.JSON())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSessions_RestartDiscardsStateAndAbortsTheRunningCell(t *testing.T) {
	t.Parallel()
	g := newGate()
	cm := newCM(t, codemode.Config{Tools: []tool.Tool{g.tool()}})
	runCell(t, cm, "s", "let x = 1")
	first := holdBusy(t, cm, g, "s")
	if err := cm.Restart(context.Background(), "s", ""); err != nil {
		t.Fatal(err)
	}
	c := <-first
	if c.Status != codemode.StatusAborted || c.Error.Reason != codemode.ReasonRestart {
		t.Fatalf("running cell: %s", c.JSON())
	}
	if c := runCell(t, cm, "s", "typeof x"); resultOf(t, c) != "undefined" {
		t.Fatalf("after restart: %s", c.JSON())
	}
}

func TestSessions_AnotherUsersInterpreterIsRefused(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	ctx := context.Background()
	if _, err := cm.Run(ctx, "s", "alice", "let secret = 42"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func() error{
		func() error { _, err := cm.Run(ctx, "s", "bob", "secret"); return err },
		func() error { _, err := cm.Run(ctx, "s", "", "secret"); return err },
		func() error { return cm.Restart(ctx, "s", "bob") },
	} {
		if err := op(); !errors.Is(err, codemode.ErrForeignSession) {
			t.Fatalf("err = %v, want ErrForeignSession", err)
		}
	}
}

// An environment first used without a user (a Go program's session, or one
// from before user isolation was turned on) is not claimed by the first run
// with a user: that user would read the variables of whoever ran it. It
// stays reachable by runs without a user only, in memory and once saved.
func TestSessions_AnOwnerlessEnvironmentIsNotClaimedByAUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openSQLite(t)
	cfg := codemode.Config{Persist: true, DB: d}
	cm := newCM(t, cfg)
	runAs(t, cm, "anon", "", "let secret = 'nobody said who'")
	refused := func(cm *codemode.CodeMode, where string) {
		t.Helper()
		if _, err := cm.Run(ctx, "anon", "carol", "secret"); !errors.Is(err, codemode.ErrForeignSession) {
			t.Fatalf("%s: carol on an owner-less environment: err = %v, want ErrForeignSession", where, err)
		}
		if err := cm.Restart(ctx, "anon", "carol"); !errors.Is(err, codemode.ErrForeignSession) {
			t.Fatalf("%s: carol restarting an owner-less environment: err = %v, want ErrForeignSession", where, err)
		}
	}
	refused(cm, "in memory")
	if c := runAs(t, cm, "anon", "", "secret"); resultOf(t, c) != "nobody said who" {
		t.Fatalf("the run without a user after carol was refused: %s", c.JSON())
	}
	cm.Close()

	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	refused(cm2, "saved")
	if c := runAs(t, cm2, "anon", "", "secret"); resultOf(t, c) != "nobody said who" {
		t.Fatalf("restored without a user: %s", c.JSON())
	}
}

// TestSessions_ConcurrentCellsInManySessions is the concurrency test run
// with -race -count=50: cells of many sessions, several per session, with
// parallel tool calls, while evictions happen.
func TestSessions_ConcurrentCellsInManySessions(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{MaxKernels: 4, IdleTTL: time.Millisecond, BusyWait: time.Minute})
	var wg sync.WaitGroup
	for i := range 8 {
		session := []string{"a", "b", "c", "d", "e", "f"}[i%6]
		wg.Go(func() {
			for range 3 {
				c, err := cm.Run(context.Background(), session, "", `const w = await Promise.all([get_weather({city: "Oslo"}), echo({text: "x"})]); w[0].temp_c`)
				if errors.Is(err, codemode.ErrTooManyKernels) {
					continue
				}
				if err != nil || c.Status != codemode.StatusOK || string(c.Result) != "9" {
					t.Errorf("session %s: %v %s", session, err, c.JSON())
				}
			}
		})
	}
	wg.Wait()
}
