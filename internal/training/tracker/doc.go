// Package tracker is the rendezvous tracker of distributed XGBoost training:
// it assigns ranks to libxgboost workers and tells each one which peers to
// link to, speaking the rabit tracker protocol of xgboost 1.7.
//
// libxgboost 1.7 has no tracker in its C API (2.x adds XGTrackerCreate); its
// Python package runs one in Python (xgboost/tracker.py). This package is a
// Go implementation of that tracker, wire-compatible with libxgboost 1.7's
// rabit client (rabit/src/allreduce_base.cc):
//
//	https://github.com/dmlc/xgboost/blob/v1.7.4/python-package/xgboost/tracker.py
//	https://github.com/dmlc/xgboost/blob/v1.7.4/rabit/src/allreduce_base.cc
//
// Workers find it through DMLC_TRACKER_URI and DMLC_TRACKER_PORT (upper case:
// libxgboost 1.7 matches these keys exactly). Every worker opens one short TCP
// connection per command: "start" (rendezvous), "print" (a log line for the
// tracker's log), "shutdown" (this rank is done) and, in rabit's fault-tolerant
// mode only, "recover".
//
// # Rank assignment
//
// Ranks are deterministic for a known world size:
//
//   - A worker whose DMLC_TASK_ID is a decimal integer in [0, world size) gets
//     that rank, as soon as it connects. Two workers claiming one rank, or a
//     number outside the range, fail the job. A worker that already carries a
//     rank (rabit sends one with "recover") keeps it.
//   - Other workers (DMLC_TASK_ID unset, which rabit sends as "NULL", or not a
//     number) wait until every rank still free has a worker waiting for it; the
//     free ranks are then handed out in ascending order to those workers sorted
//     by host address, then task id, then arrival. This is the Python tracker's
//     default (sortby="host") made total, so equal hosts (one machine) do not
//     leave the order to chance.
//
// The Python tracker ignores a numeric task id (it only sorts by it as a
// string with sortby="task", which puts "10" before "2"); honouring it here
// lets a job pin rank 0, the rank that writes the model, to its master pod.
//
// # Failure detection
//
// The protocol gives the tracker no connection to a worker after its
// rendezvous: rabit closes the tracker socket once its links are set up and
// only reconnects to print or shut down. The tracker therefore names a lost
// worker when it can observe the loss: a worker that disconnects before or
// during its rendezvous, a worker its peers cannot reach, ranks that never
// join within the start timeout, and, with WithShutdownTimeout, ranks that do
// not shut down within that time after the first rank did.
//
// # Protocol notes
//
// Things the upstream code does not say out loud:
//
//   - Integers are raw C ints in host byte order (little-endian on every
//     platform libxgboost ships for); strings are an int length and bytes.
//   - A worker never says where it is: the tracker tells its peers the
//     source address of the worker's tracker connection. A worker that came
//     over loopback (rank 0 beside its in-process tracker) is advertised to
//     workers on other machines as the address they reached the tracker at.
//   - Workers accept peer links on an ephemeral port they report to the
//     tracker, so pods must reach each other on any TCP port, not only on
//     the tracker port.
//   - The ring is always 0,1,...,n-1 (libxgboost asserts it) and the tree is
//     relabelled to fit; see newTopology.
//   - Links are negotiated one worker at a time; see Tracker.link.
//   - libxgboost retries the tracker connection DMLC_WORKER_CONNECT_RETRY
//     times (default 5) sleeping 2s, 4s, 6s, ... between attempts: about
//     20s by default, N*(N-1) seconds for N. Workers that may start well
//     before rank 0 has its tracker listening need a larger value.
//   - The tracker has no connection to a worker after its rendezvous, so it
//     cannot see a worker die mid-training; its peers see it first (their
//     collective calls fail). Survivors that call finalize still send
//     "shutdown", which is what WithShutdownTimeout builds on.
package tracker
