// Package snapshot slims the objects a diagnosis reads to what its rules read (Slim), and the
// StatefulSets whose status says settled further (SlimSettled): the transform of every read,
// informers' caches included.
package snapshot
