package localrun

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
)

// Upstream are the tasks a task waits for: its dependentTasks and the producers of its
// taskOutputParameter and taskOutputArtifact inputs (KFP's compiler adds the latter to
// dependentTasks too; a hand-built spec may not), sorted.
func Upstream(task *pipelinespec.PipelineTaskSpec) []string {
	set := map[string]bool{}
	for _, t := range task.GetDependentTasks() {
		set[t] = true
	}
	for _, p := range task.GetInputs().GetParameters() {
		if p := p.GetTaskOutputParameter().GetProducerTask(); p != "" {
			set[p] = true
		}
	}
	for _, a := range task.GetInputs().GetArtifacts() {
		if p := a.GetTaskOutputArtifact().GetProducerTask(); p != "" {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Order is a sequential order of a DAG's tasks in which every task comes after its upstream
// tasks; among tasks ready together, by name, so a run is repeatable.
func Order(dag *pipelinespec.DagSpec) ([]string, error) {
	tasks := dag.GetTasks()
	waiting := map[string]int{}
	downstream := map[string][]string{}
	for name, task := range tasks {
		up := Upstream(task)
		for _, u := range up {
			if _, ok := tasks[u]; !ok {
				return nil, fmt.Errorf("task %s depends on task %q, which the DAG does not have", name, u)
			}
			if u == name {
				return nil, fmt.Errorf("task %s depends on itself", name)
			}
			downstream[u] = append(downstream[u], name)
		}
		waiting[name] = len(up)
	}
	var ready, order []string
	for name, n := range waiting {
		if n == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		sort.Strings(ready)
		next := ready[0]
		ready = ready[1:]
		order = append(order, next)
		for _, d := range downstream[next] {
			if waiting[d]--; waiting[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(order) != len(tasks) {
		var cycle []string
		for name, n := range waiting {
			if n > 0 {
				cycle = append(cycle, name)
			}
		}
		sort.Strings(cycle)
		return nil, fmt.Errorf("the DAG has a dependency cycle among tasks %s", strings.Join(cycle, ", "))
	}
	return order, nil
}
