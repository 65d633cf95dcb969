// Package repair is the executor: it carries out a plan's actions with preconditions. It patches
// a StatefulSet only with a JSON patch that tests its UID and the image (or, for a rollback, the
// generation and every image) as diagnosed, and deletes or evicts a pod only with the UID of the
// very pod proven stuck, proven on what the injected Prover read after the executor's last write.
// It never deletes a PersistentVolumeClaim or a StatefulSet, and never scales. Its client only
// writes: it reads through what it is given — the use case's Prover, a Follower to see a patch
// observed, EvictionReads for a client dry run's eviction (by default a watch and a GET and LIST
// of the same client) — and words nothing: each action's typed outcome
// (model.Outcome) is worded by explain.Outcome.
package repair
