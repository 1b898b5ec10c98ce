package server

import (
	"net"
	"testing"
	"time"
)

// BenchmarkSetReadDeadline: what a future deadline costs a connection, as net/http sets
// several a request: on the TCP connection itself (a runtime timer moved) and on a
// deadlineListener's (an atomic store under the connection's lock).
func BenchmarkSetReadDeadline(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	dl := newDeadlineListener(ln, 250*time.Millisecond, timeouts{})
	defer dl.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	c, err := dl.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tcp := c.(*deadlineConn).Conn
	for _, conn := range []struct {
		name string
		c    net.Conn
	}{{"tcp", tcp}, {"coarse", c}} {
		b.Run(conn.name, func(b *testing.B) {
			now := time.Now()
			for i := 0; b.Loop(); i++ {
				_ = conn.c.SetReadDeadline(now.Add(time.Minute + time.Duration(i)))
			}
			_ = conn.c.SetReadDeadline(time.Time{})
		})
	}
}
