// Package loadbench measures how fast and in how much memory gangboost's trainer loads a
// HIGGS-like data set (1M rows x 28 numeric features + label), as CSV and as Parquet part files,
// from local files and from a real MinIO server on loopback, for gang sizes 1 and 3, against
// Python's pandas.read_csv + xgboost.DMatrix on the same CSV file. Each rank is its own process,
// so its peak RSS is its own. Run it with `make bench-load`; GANGBOOST_LOADBENCH_ONLY=parquet (or
// "csv s3,pandas", parts of the rows' names) runs only those rows.
//
// Peak RSS is given against the rank's shard as a dense float32 matrix twice: in all, and above
// the process's start (its peak before the load). The start, about 24 MB, is no data: it is
// mostly file-backed pages of the benchmark binary (~14 MB) and of libxgboost and the C++
// runtime (~5 MB), with ~3 MB anonymous memory; the trainer's is of the same size. So "above the
// start" is the loader's own memory, and "in all" can come near the matrix only when the shard
// is large against those fixed megabytes.
package loadbench
