// Package loadbench measures how fast and in how much memory gangboost's trainer loads a
// HIGGS-like data set (1M rows x 28 numeric features + label), as CSV and as Parquet part files,
// from local files and from a real MinIO server on loopback, for gang sizes 1 and 3, against
// Python's pandas.read_csv + xgboost.DMatrix on the same CSV file. Each rank is its own process,
// so its peak RSS is its own. Run it with `make bench-load`.
package loadbench
