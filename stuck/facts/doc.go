// Package facts holds the typed facts behind each finding stuck.Diagnose reports: what the rules
// established, in types, one type per kind of finding (stuck.Finding.Facts holds one of them and
// Facts.Code names its finding code). StaleStuck is kubernetes#67250 — an old-revision pod stuck
// at startup that the controller never replaces, with why (NeverReplaced) and the pods it blocks;
// CreateFailed carries the API server's Refusal of a pod the controller could not create;
// NotRewritten is an OpenShift image name admission did not resolve; and so on. A program that
// acts on findings switches on these types rather than parsing words.
package facts
