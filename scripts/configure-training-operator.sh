#!/usr/bin/env bash
# Makes an installed Kubeflow Training Operator gang-schedule with Volcano: adds
# --gang-scheduler-name=volcano to its container's args with a JSON patch, in place.
# The Deployment's other args, image and settings stay as they are; run twice, it
# changes nothing the second time. A --gang-scheduler-name with another value is
# replaced. Needs only kubectl and the cluster (no download).
#
# Environment: KUBECTL (kubectl), TRAINING_OPERATOR_NAMESPACE (kubeflow),
# TRAINING_OPERATOR_DEPLOYMENT (training-operator), TRAINING_OPERATOR_CONTAINER
# (training-operator; the only container when there is one).
set -euo pipefail

kubectl=${KUBECTL:-kubectl}
ns=${TRAINING_OPERATOR_NAMESPACE:-kubeflow}
deploy=${TRAINING_OPERATOR_DEPLOYMENT:-training-operator}
container=${TRAINING_OPERATOR_CONTAINER:-training-operator}
flag=--gang-scheduler-name
want=volcano

# The argument, as a JSON string.
json() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

if ! names=$($kubectl -n "$ns" get deployment "$deploy" \
    -o jsonpath='{range .spec.template.spec.containers[*]}{.name}{"\n"}{end}'); then
  echo "configure-training-operator: no deployment $ns/$deploy to patch." >&2
  echo "  Set TRAINING_OPERATOR_NAMESPACE / TRAINING_OPERATOR_DEPLOYMENT to where the operator runs," >&2
  echo "  or, on a cluster without one, install it: make configure-training-operator-full" >&2
  exit 1
fi
mapfile -t containers <<<"$names"
idx=
for i in "${!containers[@]}"; do
  [[ ${containers[$i]} == "$container" ]] && idx=$i
done
if [[ -z $idx && ${#containers[@]} -eq 1 ]]; then
  idx=0
fi
if [[ -z $idx ]]; then
  echo "configure-training-operator: deployment $ns/$deploy has no container named $container" \
    "(containers: ${containers[*]}); set TRAINING_OPERATOR_CONTAINER" >&2
  exit 1
fi

base=/spec/template/spec/containers/$idx/args
mapfile -t args < <($kubectl -n "$ns" get deployment "$deploy" \
  -o jsonpath="{range .spec.template.spec.containers[$idx].args[*]}{@}{\"\n\"}{end}")

patch=
for k in "${!args[@]}"; do
  a=${args[$k]}
  if [[ $a == "$flag=$want" ]]; then
    echo "deployment $ns/$deploy container ${containers[$idx]}: $flag=$want already set"
    exit 0
  fi
  if [[ $a == "$flag="* ]]; then
    # The test op makes the patch fail rather than replace another argument when
    # the args changed since they were read.
    patch="[{\"op\":\"test\",\"path\":\"$base/$k\",\"value\":$(json "$a")},{\"op\":\"replace\",\"path\":\"$base/$k\",\"value\":$(json "$flag=$want")}]"
    break
  fi
  if [[ $a == "$flag" ]] && ((k + 1 < ${#args[@]})); then
    v=${args[$((k + 1))]}
    if [[ $v == "$want" ]]; then
      echo "deployment $ns/$deploy container ${containers[$idx]}: $flag $want already set"
      exit 0
    fi
    patch="[{\"op\":\"test\",\"path\":\"$base/$((k + 1))\",\"value\":$(json "$v")},{\"op\":\"replace\",\"path\":\"$base/$((k + 1))\",\"value\":$(json "$want")}]"
    break
  fi
done
if [[ -z $patch ]]; then
  n=${#args[@]}
  if ((n == 0)); then
    # No args (the upstream v1.9.4 Deployment has none): "add" creates the list.
    patch="[{\"op\":\"add\",\"path\":\"$base\",\"value\":[$(json "$flag=$want")]}]"
  else
    patch="[{\"op\":\"test\",\"path\":\"$base/$((n - 1))\",\"value\":$(json "${args[$((n - 1))]}")},{\"op\":\"add\",\"path\":\"$base/-\",\"value\":$(json "$flag=$want")}]"
  fi
fi
echo "$kubectl -n $ns patch deployment $deploy --type json -p '$patch'"
$kubectl -n "$ns" patch deployment "$deploy" --type json -p "$patch"
