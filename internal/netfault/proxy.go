package netfault

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what a Proxy does to traffic.
type Mode int

const (
	// Pass forwards everything at once.
	Pass Mode = iota
	// Delay forwards every chunk after the proxy's delay.
	Delay
	// Drop closes every connection and refuses new ones.
	Drop
	// Blackhole keeps connections open and accepts new ones, but forwards
	// nothing until healed.
	Blackhole
)

func (m Mode) String() string {
	return [...]string{"pass", "delay", "drop", "blackhole"}[m]
}

// Proxy forwards connections to its listener to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	mode   Mode
	delay  time.Duration
	conns  map[net.Conn]bool // both sides of every open connection
	healed *sync.Cond        // signalled when the mode leaves Blackhole
	closed bool
}

// Listen starts a proxy on a free loopback port to target.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.healed = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set changes the mode; delay is used by Delay. Drop closes every open
// connection at once.
func (p *Proxy) Set(m Mode, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = m, delay
	if m == Drop {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
	if m != Blackhole {
		p.healed.Broadcast()
	}
}

// Heal is Set(Pass, 0).
func (p *Proxy) Heal() { p.Set(Pass, 0) }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.healed.Broadcast()
	p.mu.Unlock()
	return p.ln.Close()
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.mode == Drop || p.closed
		p.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.closed || p.mode == Drop {
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[in], p.conns[out] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(out, in); done <- struct{}{} }()
	go func() { p.pipe(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, holding each chunk while the
// proxy is a blackhole and for the delay in Delay mode.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == Blackhole && !p.closed {
				p.healed.Wait()
			}
			mode, delay, closed := p.mode, p.delay, p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if mode == Delay && delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}
