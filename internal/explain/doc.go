// Package explain words what the command line does and decides: each action's line and
// outcome, each verdict of wait, fix --wait and canary, an analysis's result. The findings
// themselves are worded by stuck.Diagnose.
package explain
