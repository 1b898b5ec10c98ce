// Package modelregistry starts a real Kubeflow Model Registry for tests: Debian's MariaDB (a data
// folder of its own, a free port, as the mysql user when the test runs as root) and `model-registry
// proxy` with its embedmd datastore on it (type mysql, what Kubeflow's manifests deploy the
// registry with), built from the registry's module by the test plane's tools (test/cluster, tool
// "modelregistry"). Both stop when the test ends.
//
// Not PostgreSQL: v0.3.0's embedmd on PostgreSQL migrates and serves, but every lookup of a
// version or inference service under its parent fails ("relation parentcontext does not exist":
// internal/db/service/model_version.go joins the quoted table "ParentContext" unquoted), and so
// does the registry's storage initializer, which resolves model-registry:// exactly that way.
package modelregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/test/cluster"
)

// Debian's MariaDB: the data folder's initialiser, the server and the client.
const (
	InstallDB     = "/usr/bin/mariadb-install-db"
	MariaDBServer = "/usr/sbin/mariadbd"
	MariaDBClient = "/usr/bin/mariadb"
)

// APIPath is the REST API's base path of this registry release.
const APIPath = "/api/model_registry/v1alpha3"

// Server is a running registry.
type Server struct {
	// URL is http://127.0.0.1:port, the registry's base URL (registry_url); Host is
	// 127.0.0.1:port (what the CSI's MODEL_REGISTRY_BASE_URL takes).
	URL, Host string
	// CSI is the registry's KServe storage initializer (model-registry-csi <uri> <dest>).
	CSI string
	// DSN is the registry's database.
	DSN string
}

// Start starts the database and the registry for t, the registry listening on 127.0.0.1.
func Start(t testing.TB) *Server { return StartOn(t, "127.0.0.1") }

// StartOn is Start with the registry listening on ip (where pods reach the host, for a storage
// initializer in a pod).
func StartOn(t testing.TB, ip string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	bins, _, err := cluster.EnsureTools(ctx, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	dsn := startDatabase(t)
	port, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	host := net.JoinHostPort(ip, strconv.Itoa(port))
	cmd := exec.Command(bins["model-registry"], "proxy", "--hostname", ip, "--port", strconv.Itoa(port),
		"--embedmd-database-type", "mysql", "--embedmd-database-dsn", dsn)
	logs := logFile(t, "model-registry")
	cmd.Stdout, cmd.Stderr = logs, logs
	p, err := procgroup.Start(cmd)
	if err != nil {
		t.Fatalf("start model-registry: %v", err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	s := &Server{URL: "http://" + host, Host: host, CSI: bins["model-registry-csi"], DSN: dsn}
	// Ready once it migrated the schema and answers the API.
	waitFor(t, p, logs, "model-registry", func() error {
		resp, err := http.Get(s.URL + APIPath + "/registered_models")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET registered_models: %s", resp.Status)
		}
		return nil
	})
	return s
}

// Get reads one resource of the registry's REST API (APIPath + path) as JSON, with a plain HTTP
// client rather than gangboost's: what the registry itself says. Anything but 200 fails t.
func (s *Server) Get(t testing.TB, path string, query url.Values) map[string]any {
	t.Helper()
	resp, err := http.Get(s.URL + APIPath + path + "?" + query.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s %v: %s %v %v", path, query, resp.Status, err, v)
	}
	return v
}

// startDatabase runs a MariaDB server in a folder of its own (as the mysql user when the test
// runs as root) with a database for the registry, and returns the registry's DSN. Grant tables
// are off: it listens on 127.0.0.1 only, for one test.
func startDatabase(t testing.TB) string {
	t.Helper()
	for _, b := range []string{InstallDB, MariaDBServer, MariaDBClient} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("MariaDB is not installed (%v): make deps installs mariadb-server", err)
		}
	}
	dir, err := os.MkdirTemp("", "gangboost-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			t.Fatalf("running as root, MariaDB needs the mysql user (mariadb-server creates it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asUser = []string{"--user=mysql"}
	}
	data := filepath.Join(dir, "data")
	install := exec.Command(InstallDB, append([]string{"--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}, asUser...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(MariaDBServer, append([]string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "mysqld.sock"), "--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--skip-grant-tables",
		"--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=32M"}, asUser...)...)
	logs := logFile(t, "mariadb")
	cmd.Stdout, cmd.Stderr = logs, logs
	p, err := procgroup.Start(cmd)
	if err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	waitFor(t, p, logs, "mariadbd", func() error {
		out, err := exec.Command(MariaDBClient, "--no-defaults", "-h127.0.0.1", "-P"+strconv.Itoa(port), "-uroot",
			"-e", "CREATE DATABASE IF NOT EXISTS model_registry").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/model_registry?charset=utf8mb4&parseTime=true", port)
}

// logFile is a file for a process's output (procgroup wants files, not pipes), kept beside the
// test's temporary files and shown when the process fails.
func logFile(t testing.TB, name string) *os.File {
	f, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readAll(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

// waitFor polls ready until it succeeds; the process ending, or a minute passing (a hang guard),
// fails the test with the process's log.
func waitFor(t testing.TB, p *procgroup.Process, logs *os.File, name string, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := ready()
		if err == nil {
			return
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("%s did not get ready: %v\n%s", name, err, readAll(logs))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type testLog struct{ t testing.TB }

var logMu sync.Mutex

func (l testLog) Write(b []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

var _ io.Writer = testLog{}
