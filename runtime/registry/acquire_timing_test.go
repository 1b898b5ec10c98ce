package registry

import "testing"

// BenchmarkAcquire times what every request does to hold the serving version, Acquire then
// Release, from every core at once.
func BenchmarkAcquire(b *testing.B) {
	l := &Loaded{}
	l.refs.Store(1) // the model's own
	m := &Model{Name: "m"}
	m.cur.Store(l)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := m.Acquire()
			if err != nil {
				b.Error(err)
				return
			}
			l.Release()
		}
	})
}
