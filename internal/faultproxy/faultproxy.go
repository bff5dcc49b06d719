package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// mode is what the proxy does with traffic.
type mode int

const (
	forwarding mode = iota
	stalled
	cut
)

// Proxy forwards connections accepted on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  mode
	wake  chan struct{} // closed when a stall ends
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	// loseAfter, when set, is the request bytes whose reply LoseReplyTo
	// drops; losing is the connection pair that sent them.
	loseAfter []byte
	losing    *pair
	// exchanges counts the clients' requests (see Exchanges).
	exchanges atomic.Int64
}

// pair is one proxied connection: the client's and the upstream one.
type pair struct {
	client, upstream net.Conn
	// answered: the upstream sent bytes since the client last did (a
	// client's next bytes start a new exchange).
	answered atomic.Bool
}

// Start listens on a free loopback port and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, wake: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Exchanges is how many round trips the clients made so far: on each
// connection, client bytes that follow upstream bytes (or open the
// connection) count one, however many reads they take. Requests a client
// sends together before reading (pgx sends a batch in one write) count
// once; a pipeline the upstream starts answering before the client has
// sent all of it counts more.
func (p *Proxy) Exchanges() int64 { return p.exchanges.Load() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection; until Restore, new connections are
// closed as soon as they are accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.setMode(cut)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Stall stops forwarding: connections stay open and accepted, bytes wait
// until Restore (or Cut).
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.setMode(stalled)
	p.mu.Unlock()
}

// Restore forwards again, including the bytes a stall held back.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.setMode(forwarding)
	p.mu.Unlock()
}

// setMode changes the mode; p.mu is held.
func (p *Proxy) setMode(m mode) {
	if p.mode == stalled && m != stalled {
		close(p.wake)
		p.wake = make(chan struct{})
	}
	p.mode = m
}

// LoseReplyTo makes the next connection that sends request bytes containing
// pattern lose the answer: the request reaches the server, which executes
// it and replies, then the proxy drops the reply and closes that
// connection. Other connections, and new ones, are untouched. It models a
// connection lost after a COMMIT was sent and before it was acknowledged.
func (p *Proxy) LoseReplyTo(pattern []byte) {
	p.mu.Lock()
	p.loseAfter = bytes.Clone(pattern)
	p.mu.Unlock()
}

// Close stops listening, closes every connection and waits for the
// forwarding goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.mode == cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects c to the target and pumps both ways until either side
// closes or the proxy cuts.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	if !p.wait() {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.forget(up)
	pr := &pair{client: c, upstream: up}
	pr.answered.Store(true)
	done := make(chan struct{}, 2)
	go func() { p.pump(pr, up, c); done <- struct{}{} }()
	go func() { p.pump(pr, c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// track registers an upstream connection, or closes it when the proxy was
// cut meanwhile.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == cut {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// loses reports whether chunk, read from src, is a reply LoseReplyTo drops;
// it marks the pair whose request matched.
func (p *Proxy) loses(pr *pair, src net.Conn, chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case src == pr.client && p.losing == nil && p.loseAfter != nil && bytes.Contains(chunk, p.loseAfter):
		p.losing, p.loseAfter = pr, nil
	case src == pr.upstream && p.losing == pr:
		p.losing = nil
		return true
	}
	return false
}

// wait blocks while the proxy is stalled; it reports whether traffic may
// flow (false once cut).
func (p *Proxy) wait() bool {
	for {
		p.mu.Lock()
		m, wake := p.mode, p.wake
		p.mu.Unlock()
		switch m {
		case forwarding:
			return true
		case cut:
			return false
		}
		<-wake
	}
}

// pump copies src to dst, holding each chunk back while the proxy stalls.
func (p *Proxy) pump(pr *pair, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if p.loses(pr, src, buf[:n]) {
				pr.client.Close()
				pr.upstream.Close()
				return
			}
			if src == pr.client {
				if pr.answered.Swap(false) {
					p.exchanges.Add(1)
				}
			} else {
				pr.answered.Store(true)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			return
		}
	}
}
