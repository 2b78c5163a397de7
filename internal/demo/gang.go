package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// The ranks of a gang run their steps in lockstep, as data-parallel
// training does (every step ends in an all-reduce): rank 0 listens on the
// master address, the other ranks connect to it, and after each step every
// rank tells rank 0 whether it finished the step or was told to stop; rank
// 0 answers commit when all finished, else stop. So every rank commits the
// same steps, stops at the same step and saves its part of the same
// checkpoint, which is what lets the job resume whole.
//
// The wire is one line per message: a rank sends "hello RANK STEP" once
// (the step it resumes from; rank 0 refuses ranks that resume from
// different steps), then "done" or "stop" per step; rank 0 answers
// "commit", "stop" or "abort WHY".

// connectTimeout bounds how long a rank waits for its gang to gather.
const connectTimeout = 2 * time.Minute

// gang is one rank's link to the others.
type gang struct {
	rank  int
	peers []*peer // rank 0: the other ranks, in any order
	boss  *peer   // the other ranks: rank 0
	ln    net.Listener
}

type peer struct {
	conn net.Conn
	r    *bufio.Reader
	rank int
}

func (p *peer) send(format string, args ...any) error {
	_ = p.conn.SetWriteDeadline(time.Now().Add(time.Minute))
	_, err := fmt.Fprintf(p.conn, format+"\n", args...)
	return err
}

// recv reads one line, waiting at most wait (0: without end).
func (p *peer) recv(wait time.Duration) (string, error) {
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	_ = p.conn.SetReadDeadline(deadline)
	line, err := p.r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("rank %d: %w", p.rank, err)
	}
	return strings.TrimSpace(line), nil
}

// joinGang gathers the gang: rank 0 listens on master's port and waits for
// every other rank; the others connect to master. Every rank must resume
// from step; a gang whose ranks would resume from different steps does not
// start.
func joinGang(ctx context.Context, rank, world int, master string, step int) (*gang, error) {
	g := &gang{rank: rank}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if rank == 0 {
		_, port, err := net.SplitHostPort(master)
		if err != nil {
			return nil, fmt.Errorf("master address %q: %w", master, err)
		}
		var lc net.ListenConfig
		g.ln, err = lc.Listen(ctx, "tcp", net.JoinHostPort("", port))
		if err != nil {
			return nil, fmt.Errorf("rank 0: listen for the gang: %w", err)
		}
		stop := context.AfterFunc(ctx, func() { g.ln.Close() })
		defer stop()
		starts := map[int]int{0: step}
		for len(starts) < world {
			c, err := g.ln.Accept()
			if err != nil {
				g.close()
				return nil, fmt.Errorf("rank 0: %d of %d ranks joined: %w", len(g.peers)+1, world, cmpErr(ctx, err))
			}
			p := &peer{conn: c, r: bufio.NewReader(c), rank: -1}
			hello, err := p.recv(10 * time.Second)
			var r, s int
			if err == nil {
				_, err = fmt.Sscanf(hello, "hello %d %d", &r, &s)
			}
			if _, twice := starts[r]; err != nil || r <= 0 || r >= world || twice {
				c.Close() // not one of ours, or a rank twice
				continue
			}
			p.rank, starts[r] = r, s
			g.peers = append(g.peers, p)
		}
		for r := 1; r < world; r++ {
			if starts[r] != step {
				why := fmt.Sprintf("abort ranks resume from different steps: rank 0 from %d, rank %d from %d", step, r, starts[r])
				g.broadcast(why)
				g.close()
				return nil, errors.New(strings.TrimPrefix(why, "abort "))
			}
		}
		return g, nil
	}
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", master)
		if err == nil {
			g.boss = &peer{conn: c, r: bufio.NewReader(c), rank: 0}
			if err := g.boss.send("hello %d %d", rank, step); err != nil {
				g.close()
				return nil, err
			}
			return g, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rank %d: reach rank 0 at %s: %w", rank, master, cmpErr(ctx, err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cmpErr is ctx's error when it ended, else err.
func cmpErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// agree tells the gang whether this rank finished its step (done) and
// returns whether every rank did: true commits the step everywhere. An
// error means the gang broke (a rank went away, or rank 0 did not answer
// within wait); the caller stops.
func (g *gang) agree(done bool, wait time.Duration) (bool, error) {
	word := "stop"
	if done {
		word = "done"
	}
	if g.boss != nil {
		if err := g.boss.send("%s", word); err != nil {
			return false, err
		}
		answer, err := g.boss.recv(wait)
		switch {
		case err != nil:
			return false, err
		case strings.HasPrefix(answer, "abort "):
			return false, errors.New(strings.TrimPrefix(answer, "abort "))
		}
		return answer == "commit", nil
	}
	all := done
	var broke error
	for _, p := range g.peers {
		m, err := p.recv(wait)
		if err != nil && broke == nil {
			broke = err
		}
		all = all && m == "done"
	}
	verdict := "stop"
	if all && broke == nil {
		verdict = "commit"
	}
	g.broadcast(verdict)
	return verdict == "commit", broke
}

func (g *gang) broadcast(msg string) {
	for _, p := range g.peers {
		_ = p.send("%s", msg)
	}
}

func (g *gang) close() {
	if g == nil {
		return
	}
	for _, p := range append(g.peers, g.boss) {
		if p != nil {
			p.conn.Close()
		}
	}
	if g.ln != nil {
		g.ln.Close()
	}
}
