// Package parity is the libxgboost parity suite of the pure-Go evaluator (runtime/forest): it
// trains a zoo of models with libxgboost through the cgo binding (internal/training/xgb) and
// checks that forest predicts what libxgboost predicts for every output kind, reads the files
// libxgboost writes (JSON, UBJSON and the legacy binary format), and measures both (and
// github.com/Elvenson/xgboost-go) in BenchmarkPredict. It needs libxgboost; forest's own tests
// do not, and build with CGO_ENABLED=0 (the suite's files need cgo, so without it this package
// has no tests rather than failing to build).
package parity
