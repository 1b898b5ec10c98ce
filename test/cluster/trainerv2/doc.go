// Package trainerv2 runs TrainJobs on the test control plane with the real
// Kubeflow Trainer v2 and JobSet controllers and the Volcano scheduler
// (cluster.Options.TrainerV2): the trainer's pods get what Trainer v2
// really injects (DMLC_*), Volcano gang-schedules them through the PodGroup
// Trainer v2 creates, and gangboost-train trains a model onto the claim.
package trainerv2
