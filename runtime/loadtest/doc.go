// Package loadtest holds the load test's peers and tools, one program a folder (the HTTP and
// gRPC floors, the gRPC load generator, the start-to-ready timer), the HTTP floor's handler
// (FloorInfer, which runtime/rest's benchmarks measure beside the runtime's own), and the tests
// of how scripts/loadtest-lib.sh splits a machine's cores between the server and the load
// generator.
package loadtest
