package sysmem

import (
	"errors"
	"os"
	"testing"
)

func TestAvailable(t *testing.T) {
	const meminfo = "MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n"
	cases := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"no cgroup limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 20000000 * 1024},
		{"cgroup v2 limit below MemAvailable", map[string]string{"/proc/meminfo": meminfo,
			"/sys/fs/cgroup/memory.max": "2147483648\n", "/sys/fs/cgroup/memory.current": "1073741824\n"}, 1 << 30},
		{"cgroup v2 limit above MemAvailable", map[string]string{"/proc/meminfo": meminfo,
			"/sys/fs/cgroup/memory.max": "1099511627776\n", "/sys/fs/cgroup/memory.current": "0\n"}, 20000000 * 1024},
		{"cgroup v1 limit", map[string]string{"/proc/meminfo": meminfo,
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "4294967296\n", "/sys/fs/cgroup/memory/memory.usage_in_bytes": "1073741824\n"}, 3 << 30},
		{"cgroup v1 without limit", map[string]string{"/proc/meminfo": meminfo,
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 20000000 * 1024},
		{"cgroup over its limit", map[string]string{"/proc/meminfo": meminfo,
			"/sys/fs/cgroup/memory.max": "100\n", "/sys/fs/cgroup/memory.current": "200\n"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := available(func(p string) ([]byte, error) {
				if s, ok := c.files[p]; ok {
					return []byte(s), nil
				}
				return nil, os.ErrNotExist
			})
			if err != nil || got != c.want {
				t.Fatalf("available = %d, %v; want %d", got, err, c.want)
			}
		})
	}
	if _, err := available(func(string) ([]byte, error) { return []byte("MemTotal: 1 kB\n"), nil }); err == nil {
		t.Fatal("meminfo without MemAvailable accepted")
	}
	if _, err := available(func(string) ([]byte, error) { return nil, errors.New("no /proc") }); err == nil {
		t.Fatal("missing /proc/meminfo accepted")
	}
	// This machine's own answer must be a positive number.
	if n, err := Available(); err != nil || n == 0 {
		t.Fatalf("Available() = %d, %v", n, err)
	}
}

func TestParseAndFormatBytes(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"16MiB", 16 << 20, true},
		{"8 GiB", 8 << 30, true},
		{"1.5GB", 1500000000, true},
		{"512B", 512, true},
		{"2TiB", 2 << 40, true},
		{"", 0, false},
		{"-1", 0, false},
		{"lots", 0, false},
		{"12XB", 0, false},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
	for n, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 16 << 20: "16 MiB", 1<<24*4*2300 + 0: "143.8 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
