package netfault

import (
	"io"
	"net"
	"testing"
	"time"
)

// echo serves an echo server until the test ends.
func echo(t *testing.T) string {
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
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes msg and reads it back, within limit.
func roundTrip(c net.Conn, msg string, limit time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(limit))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestModes(t *testing.T) {
	p, err := Listen(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "pass", time.Second); got != "pass" || err != nil {
		t.Fatalf("pass: %q %v", got, err)
	}

	p.Set(Delay, 150*time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(c, "slow", 2*time.Second); got != "slow" || err != nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("delay: %q %v after %v, want both ways delayed", got, err, time.Since(start))
	}

	// A blackhole answers nothing and reports nothing, then resumes.
	p.Set(Blackhole, 0)
	if got, err := roundTrip(c, "lost", 300*time.Millisecond); err == nil {
		t.Fatalf("blackhole answered %q", got)
	}
	_ = c.SetDeadline(time.Time{})
	p.Heal()
	buf := make([]byte, 4)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "lost" {
		t.Fatalf("after heal: %q %v", buf, err)
	}

	// Drop closes what is open and refuses what comes.
	p.Set(Drop, 0)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.Read(buf); err == nil {
		t.Fatalf("dropped connection read %d bytes", n)
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if got, err := roundTrip(c2, "x", 500*time.Millisecond); err == nil {
			t.Fatalf("a new connection during drop answered %q", got)
		}
		c2.Close()
	}
	p.Heal()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, "back", time.Second); got != "back" || err != nil {
		t.Fatalf("after drop healed: %q %v", got, err)
	}
}
