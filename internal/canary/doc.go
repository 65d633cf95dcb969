// Package canary is the canary use case: it steps a StatefulSet's partition so that a new
// template reaches the highest ordinals first, holds each step healthy (optionally measured by
// an Argo Rollouts analysis), and rolls a stuck canary back; the steps themselves are package
// canary/engine's.
package canary
