package pipelines

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/types/known/structpb"
)

// pipelinePlaceholders are the values KFP's driver replaces in a task input constant, and only
// when the constant is exactly one of them.
var pipelinePlaceholders = map[string]bool{
	"{{$.pipeline_job_name}}":          true,
	"{{$.pipeline_job_resource_name}}": true,
	"{{$.pipeline_job_uuid}}":          true,
	"{{$.pipeline_task_name}}":         true,
	"{{$.pipeline_task_uuid}}":         true,
}

// argPlaceholder is a placeholder the launcher replaces inside a container's args.
var argPlaceholder = regexp.MustCompile(`\{\{\$(?:\.(inputs|outputs)\.(parameters|artifacts)\['([^']+)'\](?:\.(?:uri|path|output_file|metadata))?)?\}\}`)

// Check reports what KFP would reject or run wrongly in a parsed package: task references,
// inputs and outputs, dependencies, the platform document's executors and mounts, and where
// placeholders stand. No errors means the package is consistent.
func Check(p *Package) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	spec := p.Spec
	dag := spec.GetRoot().GetDag()
	if dag == nil {
		bad("root has no DAG")
		return errs
	}
	rootInputs := spec.GetRoot().GetInputDefinitions().GetParameters()
	for name, in := range rootInputs {
		if in.GetDefaultValue() != nil {
			if err := checkType(in.GetParameterType(), in.GetDefaultValue()); err != nil {
				bad("pipeline parameter %s default: %v", name, err)
			}
		}
	}
	executors := spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()

	for _, name := range sortedKeys(spec.GetComponents()) {
		label := spec.GetComponents()[name].GetExecutorLabel()
		if label == "" {
			continue
		}
		exec := executors[label].GetStructValue()
		if exec == nil {
			bad("component %s: executor %s is not in deploymentSpec.executors", name, label)
			continue
		}
		checkContainer(name, spec.GetComponents()[name], exec.GetFields()["container"].GetStructValue(), bad)
	}

	producers := map[string]map[string]bool{}
	for _, taskName := range sortedKeys(dag.GetTasks()) {
		task := dag.GetTasks()[taskName]
		comp := spec.GetComponents()[task.GetComponentRef().GetName()]
		if comp == nil {
			bad("task %s: component %q does not exist", taskName, task.GetComponentRef().GetName())
			continue
		}
		producers[taskName] = map[string]bool{}
		params := comp.GetInputDefinitions().GetParameters()
		for _, inName := range sortedKeys(task.GetInputs().GetParameters()) {
			in := task.GetInputs().GetParameters()[inName]
			if params[inName] == nil {
				bad("task %s: input %s is not an input of %s", taskName, inName, task.GetComponentRef().GetName())
			}
			switch kind := in.GetKind().(type) {
			case *pipelinespec.TaskInputsSpec_InputParameterSpec_ComponentInputParameter:
				if rootInputs[kind.ComponentInputParameter] == nil {
					bad("task %s: input %s takes pipeline parameter %q, which does not exist", taskName, inName, kind.ComponentInputParameter)
				}
			case *pipelinespec.TaskInputsSpec_InputParameterSpec_TaskOutputParameter:
				from := kind.TaskOutputParameter
				producers[taskName][from.GetProducerTask()] = true
				prod := dag.GetTasks()[from.GetProducerTask()]
				if prod == nil {
					bad("task %s: input %s takes an output of task %q, which does not exist", taskName, inName, from.GetProducerTask())
					continue
				}
				pc := spec.GetComponents()[prod.GetComponentRef().GetName()]
				if pc.GetOutputDefinitions().GetParameters()[from.GetOutputParameterKey()] == nil {
					bad("task %s: input %s takes %s.%s, which %s does not output", taskName, inName, from.GetProducerTask(), from.GetOutputParameterKey(), prod.GetComponentRef().GetName())
				}
			case *pipelinespec.TaskInputsSpec_InputParameterSpec_RuntimeValue:
				if s := kind.RuntimeValue.GetConstant().GetStringValue(); strings.Contains(s, "{{") && !pipelinePlaceholders[s] {
					bad("task %s: input %s constant %q: KFP replaces only a whole pipeline placeholder in a constant", taskName, inName, s)
				}
			}
		}
		arts := comp.GetInputDefinitions().GetArtifacts()
		for _, inName := range sortedKeys(task.GetInputs().GetArtifacts()) {
			if arts[inName] == nil {
				bad("task %s: artifact input %s is not an input of %s", taskName, inName, task.GetComponentRef().GetName())
			}
			if from := task.GetInputs().GetArtifacts()[inName].GetTaskOutputArtifact(); from != nil {
				producers[taskName][from.GetProducerTask()] = true
				prod := dag.GetTasks()[from.GetProducerTask()]
				if prod == nil || spec.GetComponents()[prod.GetComponentRef().GetName()].GetOutputDefinitions().GetArtifacts()[from.GetOutputArtifactKey()] == nil {
					bad("task %s: artifact input %s takes %s.%s, which does not exist", taskName, inName, from.GetProducerTask(), from.GetOutputArtifactKey())
				}
			}
		}
		for _, inName := range sortedKeys(params) {
			ps := params[inName]
			if !ps.GetIsOptional() && ps.GetDefaultValue() == nil && task.GetInputs().GetParameters()[inName] == nil {
				bad("task %s: required input %s is not set", taskName, inName)
			}
		}
		deps := append([]string(nil), task.GetDependentTasks()...)
		sort.Strings(deps)
		if want := sortedKeys(producers[taskName]); strings.Join(deps, ",") != strings.Join(want, ",") {
			bad("task %s: dependentTasks %v, want the tasks it takes outputs from %v", taskName, deps, want)
		}
		for _, d := range deps {
			if dag.GetTasks()[d] == nil {
				bad("task %s: depends on task %q, which does not exist", taskName, d)
			}
		}
	}
	if cycle := findCycle(dag); cycle != nil {
		bad("tasks form a cycle: %s", strings.Join(cycle, " -> "))
	}

	// A step told the claim's name must see the claim: its executor mounts it.
	for _, taskName := range sortedKeys(dag.GetTasks()) {
		task := dag.GetTasks()[taskName]
		if task.GetInputs().GetParameters()[claimInput] == nil {
			continue
		}
		exec := spec.GetComponents()[task.GetComponentRef().GetName()].GetExecutorLabel()
		if len(p.Kubernetes[exec].GetPvcMount()) == 0 {
			bad("task %s takes the claim (%s) but executor %s mounts no claim", taskName, claimInput, exec)
		}
	}
	for _, exec := range sortedKeys(p.Kubernetes) {
		if executors[exec] == nil {
			bad("platform document: executor %s is not in deploymentSpec.executors", exec)
		}
		for _, m := range p.Kubernetes[exec].GetPvcMount() {
			if !path.IsAbs(m.GetMountPath()) {
				bad("platform document: executor %s mounts a claim at %q, want an absolute path", exec, m.GetMountPath())
			}
			if param := m.GetComponentInputParameter(); param != "" && rootInputs[param] == nil {
				bad("platform document: executor %s mounts the claim named by pipeline parameter %q, which does not exist", exec, param)
			}
			checkClaimTasks(spec, exec, m.GetComponentInputParameter(), m.GetMountPath(), bad)
		}
	}
	return errs
}

// checkClaimTasks: each task of the executor is told the claim the pod mounts (its pvc_name comes
// from the same parameter) and where (its pvc_mount_path is the mount path).
func checkClaimTasks(spec *pipelinespec.PipelineSpec, exec, param, mountPath string, bad func(string, ...any)) {
	for _, taskName := range sortedKeys(spec.GetRoot().GetDag().GetTasks()) {
		task := spec.GetRoot().GetDag().GetTasks()[taskName]
		if spec.GetComponents()[task.GetComponentRef().GetName()].GetExecutorLabel() != exec {
			continue
		}
		in := task.GetInputs().GetParameters()
		if param != "" {
			if got := in[claimInput].GetComponentInputParameter(); got != param {
				bad("task %s mounts the claim of parameter %s but its %s takes %q", taskName, param, claimInput, got)
			}
		}
		if v, ok := in[mountPathInput]; ok {
			if got := v.GetRuntimeValue().GetConstant().GetStringValue(); got != mountPath {
				bad("task %s: %s is %q but the claim is mounted at %s", taskName, mountPathInput, got, mountPath)
			}
		}
	}
}

// checkContainer: only {{$}} is replaced inside command; args placeholders name the component's
// own inputs and outputs; the image has none.
func checkContainer(name string, comp *pipelinespec.ComponentSpec, container *structpb.Struct, bad func(string, ...any)) {
	if container == nil {
		bad("component %s: executor has no container", name)
		return
	}
	c := container.AsMap()
	if img, _ := c["image"].(string); img == "" || strings.Contains(img, "{{") {
		bad("component %s: image %q: want a fixed image reference", name, img)
	}
	cmd, _ := c["command"].([]any)
	for _, v := range cmd {
		if s, _ := v.(string); strings.Contains(s, "{{") && s != "{{$}}" {
			bad("component %s: command element %q: only {{$}} is replaced in command; put placeholders in args", name, s)
		}
	}
	args, _ := c["args"].([]any)
	for _, v := range args {
		s, _ := v.(string)
		rest := s
		for _, m := range argPlaceholder.FindAllStringSubmatch(s, -1) {
			rest = strings.Replace(rest, m[0], "", 1)
			if m[1] == "" {
				continue
			}
			var known bool
			switch m[1] + "." + m[2] {
			case "inputs.parameters":
				known = comp.GetInputDefinitions().GetParameters()[m[3]] != nil
			case "inputs.artifacts":
				known = comp.GetInputDefinitions().GetArtifacts()[m[3]] != nil
			case "outputs.parameters":
				known = comp.GetOutputDefinitions().GetParameters()[m[3]] != nil
			case "outputs.artifacts":
				known = comp.GetOutputDefinitions().GetArtifacts()[m[3]] != nil
			}
			if !known {
				bad("component %s: args placeholder %s names no %s %s of the component", name, m[0], m[1], m[2])
			}
		}
		if strings.Contains(rest, "{{") {
			bad("component %s: args element %q has a placeholder KFP's launcher does not replace", name, s)
		}
	}
}

// findCycle returns a cycle among the tasks' dependencies, or nil.
func findCycle(dag *pipelinespec.DagSpec) []string {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(string) []string
	visit = func(t string) []string {
		state[t] = active
		stack = append(stack, t)
		task := dag.GetTasks()[t]
		next := append([]string(nil), task.GetDependentTasks()...)
		for _, in := range task.GetInputs().GetParameters() {
			if p := in.GetTaskOutputParameter().GetProducerTask(); p != "" {
				next = append(next, p)
			}
		}
		sort.Strings(next)
		for _, n := range next {
			if dag.GetTasks()[n] == nil {
				continue
			}
			switch state[n] {
			case active:
				for i, s := range stack {
					if s == n {
						return append(append([]string(nil), stack[i:]...), n)
					}
				}
			case unseen:
				if c := visit(n); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[t] = done
		return nil
	}
	for _, t := range sortedKeys(dag.GetTasks()) {
		if state[t] == unseen {
			if c := visit(t); c != nil {
				return c
			}
		}
	}
	return nil
}
