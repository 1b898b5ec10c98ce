package tracker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The wire format is the one rabit's AllreduceBase speaks (libxgboost 1.7,
// rabit/src/allreduce_base.cc, ConnectTracker and ReConnectLinks):
//
//	https://github.com/dmlc/xgboost/blob/v1.7.4/rabit/src/allreduce_base.cc
//
// Integers are raw C ints written with send(&v, sizeof(int)), that is 4 bytes
// in host byte order; the Python tracker reads them with struct "@i". Every
// platform libxgboost ships for (amd64, arm64, ppc64le) is little-endian, so
// the tracker fixes little-endian. Strings are an int length followed by that
// many bytes, without a terminator.

// magic is rabit's kMagic: the worker sends it first and expects it echoed.
const magic = 0xff99

// Commands a worker sends after the hello.
const (
	cmdStart    = "start"    // first rendezvous: assign a rank, set up links
	cmdRecover  = "recover"  // rejoin with a known rank and re-link the lost peers
	cmdPrint    = "print"    // one log message follows
	cmdShutdown = "shutdown" // this rank has finished
)

// Limits on strings read from a socket: anything that connects to the
// tracker port (a probe, a scanner) must not make it allocate gigabytes.
const (
	maxTaskIDLen  = 4 << 10
	maxCommandLen = 64
	maxMessageLen = 16 << 20
	maxHostLen    = 1 << 10
	maxNeighbours = 1 << 16
)

var errBadMagic = errors.New("not a rabit worker: bad magic number")

func readInt(r io.Reader) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return int(int32(binary.LittleEndian.Uint32(b[:]))), nil
}

func writeInt(w io.Writer, v int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(int32(v)))
	_, err := w.Write(b[:])
	return err
}

func readString(r io.Reader, limit int) (string, error) {
	n, err := readInt(r)
	if err != nil {
		return "", err
	}
	if n < 0 || n > limit {
		return "", fmt.Errorf("string length %d outside [0, %d]", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func appendInt(b []byte, v int) []byte {
	return binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
}

func appendString(b []byte, s string) []byte {
	return append(appendInt(b, len(s)), s...)
}

func writeString(w io.Writer, s string) error {
	if err := writeInt(w, len(s)); err != nil {
		return err
	}
	_, err := io.WriteString(w, s)
	return err
}

// hello is what every worker connection starts with, whatever the command:
// magic (echoed back by the tracker), rank, world size, task id, command.
// A fresh worker sends rank -1 (AllreduceBase::Init resets it before the
// rendezvous) and world size -1 unless rabit_world_size is set; print and
// shutdown connections carry the rank the worker was given.
type hello struct {
	rank      int
	worldSize int
	taskID    string // "NULL" when DMLC_TASK_ID is unset
	cmd       string
}

// readHello performs the magic exchange and reads the rest of the hello.
func readHello(rw io.ReadWriter) (hello, error) {
	var h hello
	m, err := readInt(rw)
	if err != nil {
		return h, fmt.Errorf("read magic: %w", err)
	}
	if m != magic {
		return h, fmt.Errorf("%w: got %#x, want %#x", errBadMagic, m, magic)
	}
	if err := writeInt(rw, magic); err != nil {
		return h, fmt.Errorf("echo magic: %w", err)
	}
	if h.rank, err = readInt(rw); err != nil {
		return h, fmt.Errorf("read rank: %w", err)
	}
	if h.worldSize, err = readInt(rw); err != nil {
		return h, fmt.Errorf("read world size: %w", err)
	}
	if h.taskID, err = readString(rw, maxTaskIDLen); err != nil {
		return h, fmt.Errorf("read task id: %w", err)
	}
	if h.cmd, err = readString(rw, maxCommandLen); err != nil {
		return h, fmt.Errorf("read command: %w", err)
	}
	return h, nil
}

// sendAssignment tells a worker its place in the topology, in the order
// ReConnectLinks reads it: rank, parent rank, world size, number of tree
// neighbours, the tree neighbours, ring prev, ring next. A ring link that
// would point at the worker itself (world size 1) is sent as -1.
func sendAssignment(w io.Writer, rank int, topo topology) error {
	prev, next := topo.ring[rank][0], topo.ring[rank][1]
	if prev == rank {
		prev = -1
	}
	if next == rank {
		next = -1
	}
	b := make([]byte, 0, 4*(6+len(topo.tree[rank])))
	b = appendInt(b, rank)
	b = appendInt(b, topo.parent[rank])
	b = appendInt(b, topo.worldSize())
	b = appendInt(b, len(topo.tree[rank]))
	for _, r := range topo.tree[rank] {
		b = appendInt(b, r)
	}
	b = appendInt(b, prev)
	b = appendInt(b, next)
	_, err := w.Write(b)
	return err
}
