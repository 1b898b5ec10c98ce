package stepcmd

import (
	"context"
	"os"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/steps/evaluate"
)

// Evaluate is evaluate: it sends the test set to a V2 inference endpoint and outputs the
// model's metrics, the latency of its calls and an HTML report.
func Evaluate(args []string) int {
	return kfp.RunComponent("evaluate", args, nil, func(ctx context.Context, e *kfp.Executor) error {
		return evaluate.RunExecutor(ctx, e, secretReader("", ""), os.Stdout)
	})
}
