package rest

import (
	"context"
	"testing"
)

// BenchmarkExchangeServe times decode -> evaluate -> encode of one request in a reused exchange,
// without HTTP: the part of a request's cost that is this server's own.
func BenchmarkExchangeServe(b *testing.B) {
	svc := newService(b, false)
	m, l := irisVersion(b, svc)
	for _, r := range inferBodies {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			x := new(exchange)
			for i := 0; i < b.N; i++ {
				x.body = append(x.body[:0], r.body...)
				if _, err := x.serve(context.Background(), svc, m, l, r.headerLen, "id-1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
