package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes lines back until the connection closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// proxied starts a proxy in front of a new echo server; both close with the test.
func proxied(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial connects to the proxy; the connection closes with the test.
func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(c net.Conn, br *bufio.Reader, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	return br.ReadString('\n')
}

func TestProxy_ForwardsStallsRestoresAndCuts(t *testing.T) {
	p := proxied(t)
	c, br := dial(t, p)
	if got, err := roundTrip(c, br, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("forwarding: %q, %v", got, err)
	}

	p.Stall()
	if got, err := roundTrip(c, br, 200*time.Millisecond); err == nil {
		t.Fatalf("stalled proxy answered %q", got)
	}
	p.Restore()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := br.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("after restore the held-back bytes arrive: %q, %v", got, err)
	}

	p.Cut()
	if got, err := roundTrip(c, br, 5*time.Second); err == nil {
		t.Fatalf("cut connection answered %q", got)
	}
	c2, br2 := dial(t, p)
	if got, err := roundTrip(c2, br2, 5*time.Second); err == nil {
		t.Fatalf("a new connection through a cut proxy answered %q", got)
	}

	p.Restore()
	c3, br3 := dial(t, p)
	if got, err := roundTrip(c3, br3, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after restore new connections forward: %q, %v", got, err)
	}
}

// TestProxy_LoseReplyTo: the matching request reaches the server, its
// reply is dropped and that connection closed; a new connection works.
func TestProxy_LoseReplyTo(t *testing.T) {
	t.Parallel()
	p := proxied(t)
	c, br := dial(t, p)
	if got, err := roundTrip(c, br, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("before: %q, %v", got, err)
	}
	p.LoseReplyTo([]byte("commit"))
	if _, err := c.Write([]byte("commit\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := br.ReadString('\n'); err == nil {
		t.Fatalf("the reply to the matching request arrived: %q", got)
	}
	c2, br2 := dial(t, p)
	if got, err := roundTrip(c2, br2, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("a new connection: %q, %v", got, err)
	}
}

// Exchanges counts one per request a client sends after an answer;
// requests sent together before reading (a pipeline in one write, as pgx
// sends a batch) count once.
func TestProxy_CountsExchanges(t *testing.T) {
	p := proxied(t)
	c, br := dial(t, p)
	for range 3 {
		if _, err := roundTrip(c, br, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Exchanges(); n != 3 {
		t.Fatalf("3 round trips counted as %d", n)
	}
	// A pipeline: three lines, then the three answers.
	if _, err := c.Write([]byte("ping\nping\nping\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 3 {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Exchanges(); n != 4 {
		t.Fatalf("a pipeline of 3 counted as %d round trips", n-3)
	}
}
