package dataset

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/test/s3server"
)

// objectGets are the keys of bucket the rank's requests fetched (GETs of objects, not listings).
func objectGets(reqs []s3server.Request, bucket string, rank, world int) map[string]int64 {
	ua := fmt.Sprintf("gangboost/rank-%d-of-%d", rank, world)
	got := map[string]int64{}
	for _, r := range reqs {
		if r.Method == "GET" && r.Bucket == bucket && r.Key != "" && strings.Contains(r.UserAgent, ua) {
			got[r.Key] += r.BytesSent
		}
	}
	return got
}

func TestS3PartsEachRankReadsOnlyItsObjects(t *testing.T) {
	srv := s3server.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv.MakeBucket(t, "data")
	starts, n := []int{0, 300, 400, 1000, 1100}, []int{300, 100, 600, 100, 500}
	var sizes []int64
	var keys []string
	for i := range starts {
		b := parquetBytes(t, testRows(starts[i], n[i]), 128)
		key := fmt.Sprintf("higgs/part-%05d.parquet", i)
		srv.Put(t, "data", key, b)
		sizes, keys = append(sizes, int64(len(b))), append(keys, key)
	}
	srv.Put(t, "data", "higgs/_SUCCESS", nil)
	store := ObjectStore{Endpoint: srv.Endpoint, PathStyle: true}
	const world = 3
	var all []int
	readBy := map[string]int{}
	for r := range world {
		srv.ResetRequests()
		m, err := Load(Spec{Path: "s3://data/higgs/", Label: "label", ObjectStore: store}, Shard{r, world})
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		all = append(all, globalRows(t, m)...)
		// What the server answered this rank, as the counting proxy in front of it saw it.
		gets := objectGets(srv.Requests(), "data", r, world)
		var want []string
		var wantBytes int64
		for _, i := range assign(sizes, r, world) {
			want = append(want, keys[i])
			wantBytes += sizes[i]
		}
		got := slices.Sorted(func(yield func(string) bool) {
			for k := range gets {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("rank %d fetched objects %v, want only its own %v", r, got, want)
		}
		var sent int64
		for _, k := range got {
			sent += gets[k]
			readBy[k]++
		}
		if sent != m.BytesRead || sent > wantBytes {
			t.Errorf("rank %d: the server sent %d bytes, the load counted %d; its objects hold %d", r, sent, m.BytesRead, wantBytes)
		}
		t.Logf("rank %d of %d: objects %v, %d bytes of %d in all", r, world, got, sent, sum(sizes))
	}
	for _, k := range keys {
		if readBy[k] != 1 {
			t.Errorf("%s was read by %d ranks, want 1", k, readBy[k])
		}
	}
	slices.Sort(all)
	if len(all) != 1600 || len(slices.Compact(all)) != 1600 {
		t.Fatalf("the ranks hold %d rows together, want each of 1600 once", len(all))
	}
}

func sum(v []int64) (s int64) {
	for _, x := range v {
		s += x
	}
	return s
}

func TestS3CSVObjectIsSplitByByteRange(t *testing.T) {
	srv := s3server.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv.MakeBucket(t, "data")
	var b strings.Builder
	b.WriteString("f0,f1,label\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "%d,%d.5,%d\n", i, i%17, i%2)
	}
	srv.Put(t, "data", "one.csv", []byte(b.String()))
	var rows int
	for r := range 3 {
		srv.ResetRequests()
		m, err := Load(Spec{Path: "s3://data/one.csv", Label: "label", ObjectStore: ObjectStore{Endpoint: srv.Endpoint, PathStyle: true}}, Shard{r, 3})
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		rows += m.Rows
		if m.BytesRead > int64(b.Len())/3+64<<10+4096 {
			t.Errorf("rank %d read %d bytes of %d: want about a third (and the header)", r, m.BytesRead, b.Len())
		}
	}
	if rows != 3000 {
		t.Errorf("the ranks hold %d rows together, want 3000", rows)
	}
}

func TestS3ErrorsSayWhatToDo(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "data")
	srv.Put(t, "data", "a.csv", []byte("x,y\n1,2\n"))
	for i := range 25 {
		srv.Put(t, "data", fmt.Sprintf("many/p%03d.csv", i), []byte("x,y\n1,2\n"))
	}
	store := ObjectStore{Endpoint: srv.Endpoint, PathStyle: true}
	cases := []struct {
		name        string
		key, secret string
		spec        Spec
		want        []string
	}{
		{"wrong secret", s3server.AccessKey, "not-the-secret", Spec{Path: "s3://data/a.csv"},
			[]string{"s3://data/a.csv", "refused the credentials", "SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"}},
		{"unknown access key", "nobody", "x", Spec{Path: "s3://data/"},
			[]string{"refused the credentials", "InvalidAccessKeyId"}},
		{"missing bucket", s3server.AccessKey, s3server.SecretKey, Spec{Path: "s3://nosuch/data/"},
			[]string{`bucket "nosuch" does not exist`, "--s3-endpoint"}},
		{"missing object", s3server.AccessKey, s3server.SecretKey, Spec{Path: "s3://data/b.csv"},
			[]string{"s3://data/b.csv", "no object with this key or under this prefix"}},
		{"listing past the bound", s3server.AccessKey, s3server.SecretKey, Spec{Path: "s3://data/many/", Limits: Limits{MaxObjects: 20}},
			[]string{"prefix s3://data/many/ holds more than 20 files", "narrower prefix"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", c.key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", c.secret)
			spec := c.spec
			spec.Label, spec.ObjectStore = "y", store
			_, err := Load(spec, Shard{})
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
