// Package forest evaluates XGBoost models in pure Go: it reads the JSON and UBJSON files
// XGBoost's save_model writes, and its legacy binary format (model.bst / .model, with or
// without the "binf" header; see legacy.go), and predicts what libxgboost's
// Booster.predict returns. The format is told by content, never by file name; Python
// pickles (joblib included) are refused with a message saying how to convert them.
//
// Supported: gbtree, dart (weight_drop applied, also where XGBoost 3.3 and later save
// dart as a gbtree with weight_drop) and gblinear boosters; objectives
// reg:squarederror (and the old reg:linear), reg:squaredlogerror, reg:pseudohubererror,
// reg:absoluteerror, reg:quantileerror, reg:logistic, binary:logistic,
// binary:logitraw, binary:hinge, count:poisson, reg:gamma, reg:tweedie, survival:cox,
// survival:aft, multi:softmax, multi:softprob, rank:pairwise, rank:ndcg, rank:map;
// base_score in the objective's probability space (converted like
// ObjFunction::ProbToMargin), one per target or class in 3.x files; missing values
// (NaN) following each node's default direction; num_parallel_tree (trees grouped by
// tree_info); pruned trees with deleted nodes; categorical splits (partition and
// one-hot) on category codes; multi-output regression with one tree per target or
// with vector-leaf trees (multi_strategy=multi_output_tree, 2.x and 3.x layouts). The
// layouts of XGBoost 1.x, 2.x and 3.x files are read, including the bare NaN and
// Infinity tokens XGBoost writes.
//
// Semantics that changed between XGBoost versions follow the "version" the file
// carries: from 3.4, the predictions of reg:quantileerror with several quantiles are
// sorted per row so quantiles never cross (margins are not), and a multi-class
// gblinear model adds base_score[0] to every class; a 3.1 to 3.3 gblinear file with
// distinct per-class intercepts is refused. Refused at load with an error naming
// them: category names saved with a 3.x model (a non-empty "cats" encoder), unknown
// objectives and boosters, fields no XGBoost 1.0 to 3.4 model file has (in the
// document, learner, learner_model_param, booster, model and tree objects; the
// objective's and parameter blocks' training settings are not read), and the binary format's features libxgboost 1.x cannot read
// either (prediction buffers and multi-root trees of XGBoost < 0.7, vector leaves).
// testdata/zoo holds models saved by XGBoost 3.4.1 and 2.1.4 with XGBoost's own
// outputs; zoo_test.go requires every one to match or be refused.
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
// once; see kernel.go. On amd64 a single row of a model whose trees are at most 8 deep
// takes the row kernel instead: each output group's trees in groups of twelve stored
// as full trees, one word a node (kernel_row.go). On CPUs with AVX-512, batches of 32
// rows or more of models whose trees are at most 6 deep walk sixteen rows to a vector
// instead, each tree stored as a full tree level by level (kernel_wide.go). Batches
// large enough to pay for it are split across GOMAXPROCS cores.
//
// Sizes a model declares are bounded at load (classes, features, trees, nodes; see
// model.go), so what a call allocates stays proportional to one row, whatever the
// file says.
package forest
