// Package scenario runs the seed bug's scenario end to end with real parts:
// a private containerd whose CRI plugin calls this project's CNI plugin,
// which asks a real ipamd process, which reconciles through the containerd
// adapter plugin. The end-to-end tests assert on every step; `make demo`
// runs the same steps and narrates them.
//
// The scenario, from the bug report: pods get addresses under their infra
// sandbox IDs; ipamd is killed and restarted; a pod deleted afterwards is
// found by its sandbox ID and its address released (the bug answered
// "unknown pod" here); a pod whose DEL never reached ipamd is released by
// the reconciler once the runtime no longer lists its sandbox.
package scenario
