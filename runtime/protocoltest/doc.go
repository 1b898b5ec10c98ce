// Package protocoltest runs the real gangboost-runtime binary on loopback ports and calls it
// with real clients: curl, Python requests + numpy sending what KServe's InferenceRESTClient
// sends, Go's HTTP client for the bad-input suite, and a gRPC client.
package protocoltest
