// Package forest evaluates XGBoost models in pure Go: it reads the JSON and UBJSON files
// XGBoost's save_model writes, and its legacy binary format (model.bst / .model, with or
// without the "binf" header; see legacy.go), and predicts what libxgboost's
// Booster.predict returns. The format is told by content, never by file name; Python
// pickles (joblib included) are refused with a message saying how to convert them.
//
// Supported: gbtree, dart (weight_drop applied) and gblinear boosters; objectives
// reg:squarederror (and the old reg:linear), reg:squaredlogerror, reg:pseudohubererror,
// reg:absoluteerror, reg:quantileerror, reg:logistic, binary:logistic,
// binary:logitraw, binary:hinge, count:poisson, reg:gamma, reg:tweedie, survival:cox,
// multi:softmax, multi:softprob, rank:pairwise, rank:ndcg, rank:map; base_score in
// the objective's probability space (converted like ObjFunction::ProbToMargin), one
// per target in 3.x files; missing values (NaN) following each node's default
// direction; num_parallel_tree (trees grouped by tree_info); pruned trees with deleted
// nodes; categorical splits (partition and one-hot); multi-output regression with one
// tree per target. The layouts of XGBoost 1.x, 2.x and 3.x files are read, including
// the bare NaN and Infinity tokens XGBoost writes. Multi-target trees with vector
// leaves (multi_strategy=multi_output_tree) and unknown objectives fail at load with
// an error naming them; so do the binary format's features libxgboost 1.x cannot read
// either (prediction buffers and multi-root trees of XGBoost < 0.7, vector leaves).
//
// Predictions are float32 computations in XGBoost's order (base margin, then each
// tree's leaf value in tree order), so they agree with libxgboost's to float32
// rounding: the parity tests find margins bit-identical. Contributions come from
// per-leaf tables precomputed at load (path-based TreeSHAP, shappath.go), exact SHAP
// values like libxgboost's, equal to them within float32 rounding (about half
// bit-identical on the parity zoo); trees too large for tables use exact TreeSHAP as
// XGBoost computes it.
//
// Trees are flattened into arrays, right child next to the left, and evaluated by
// branch-free kernels that walk eight trees (one row) or eight rows (a block) at
// once; see kernel.go. Batches large enough to pay for it are split across
// GOMAXPROCS cores.
//
// Sizes a model declares are bounded at load (classes, features, trees, nodes; see
// model.go), so what a call allocates stays proportional to one row, whatever the
// file says.
package forest
