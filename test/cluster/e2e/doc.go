// Package e2e checks gang scheduling end to end on the test control plane
// (package cluster): XGBoostJobs through the real training operator and
// Volcano scheduler, their pods run by the pod runner, models trained by the
// real trainer onto a local "PVC" folder.
package e2e
