// floor trains with libxgboost's C API alone, as gangboost-train trains one rank: the floor its
// overhead is measured against (test/trainbench/run.sh).
//   floor DATA ROWS COLS NTHREAD ROUNDS
// DATA is ROWS x (1 + COLS) float32 values, row-major, the label first. Prints the seconds of
// building the DMatrix and of boosting (a train-set evaluation each round, as the trainer logs).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xgboost/c_api.h>

#define CHECK(call) do { if ((call) != 0) { fprintf(stderr, "%s: %s\n", #call, XGBGetLastError()); exit(1); } } while (0)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: floor DATA ROWS COLS NTHREAD ROUNDS\n");
		return 2;
	}
	const char* path = argv[1];
	long rows = atol(argv[2]), cols = atol(argv[3]);
	int rounds = atoi(argv[5]);
	float* all = malloc(sizeof(float) * rows * (cols + 1));
	FILE* f = fopen(path, "rb");
	if (!f || fread(all, sizeof(float), rows * (cols + 1), f) != (size_t)(rows * (cols + 1))) {
		fprintf(stderr, "read %s\n", path);
		return 1;
	}
	fclose(f);
	float* x = malloc(sizeof(float) * rows * cols);
	float* y = malloc(sizeof(float) * rows);
	for (long i = 0; i < rows; i++) {
		y[i] = all[i * (cols + 1)];
		for (long j = 0; j < cols; j++) x[i * cols + j] = all[i * (cols + 1) + 1 + j];
	}
	free(all);

	double t0 = now();
	DMatrixHandle d;
	CHECK(XGDMatrixCreateFromMat_omp(x, rows, cols, -1e38f, &d, atoi(argv[4])));
	CHECK(XGDMatrixSetFloatInfo(d, "label", y, rows));
	BoosterHandle b;
	CHECK(XGBoosterCreate(&d, 1, &b));
	const char* params[][2] = {
		{"objective", "binary:logistic"}, {"tree_method", "hist"}, {"max_depth", "6"}, {"eta", "0.3"},
		{"nthread", argv[4]}, {"seed", "0"},
	};
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) CHECK(XGBoosterSetParam(b, params[i][0], params[i][1]));
	double t1 = now();
	const char* names[] = {"train"};
	const char* res = NULL;
	for (int r = 0; r < rounds; r++) {
		CHECK(XGBoosterUpdateOneIter(b, r, d));
		CHECK(XGBoosterEvalOneIter(b, r, &d, names, 1, &res));
	}
	double t2 = now();
	printf("matrix_s=%.3f boosting_s=%.3f last=%s\n", t1 - t0, t2 - t1, res);
	XGBoosterFree(b);
	XGDMatrixFree(d);
	return 0;
}
