// Package loopbacktest is the slow-body flood the tests of the CLI's HTTP
// servers attack them with: connections that send a request's headers and
// the first byte of its body, and no more.
package loopbacktest

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// SlowBodies opens n connections to addr that each send a POST to path
// with the extra header lines (each ending in "\r\n"), announcing a body
// of 1,000 bytes and sending its first byte, "{", only. They are closed
// when the test ends.
func SlowBodies(t testing.TB, addr, path string, n int, extra string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n{", path, addr, extra)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// StillOpen counts the connections of conns the server has not closed: a
// read waits out a short deadline on those, and ends at once with EOF or
// a reset on the others.
func StillOpen(conns []net.Conn) int {
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	return open
}

// WaitUntil polls cond every millisecond, failing the test when it is not
// true within a minute (a bound on a hang, not a measure).
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in a minute", what)
		}
	}
}
