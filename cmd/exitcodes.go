package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/stsdiag/stsdiag/internal/render"
)

// ExitCodeDoc is one exit code and what it means on each command that exits with it. ExitCodes is
// the one source of the exit codes' words: every command's --help ends with its own, the root's
// --help lists them all, and the tables of README.md and docs/ci.md are generated from it (a test
// in e2e/internal/doccheck fails when they differ).
type ExitCodeDoc struct {
	Code int
	// Meaning is the code's meaning, in one line.
	Meaning string
	// On is what the code means on each command that exits with it, in command order.
	On []CommandMeaning
}

// CommandMeaning is what an exit code means on one command.
type CommandMeaning struct {
	Command, Meaning string
}

// ExitCodes lists every exit code of kubectl-stsdiag (cmd's Exit constants), lowest first.
func ExitCodes() []ExitCodeDoc {
	return []ExitCodeDoc{
		{ExitOK, "success", []CommandMeaning{
			{"check", "no finding at or above --fail-on (default error)"},
			{"preflight", "every rollout the apply starts would finish by itself, and no finding at or above --fail-on"},
			{"explain", "the rollout is not stuck"},
			{"fix", "every planned action done (with --wait, the rollout complete too); --dry-run: the plan printed"},
			{"wait", "every rollout complete"},
			{"canary", "every step healthy and the rollout complete; --dry-run: the plan printed"},
			{"migrate", "migrated, nothing to migrate, or a --dry-run plan; --status: no migration under way"},
			{"watch", "stopped by SIGINT or SIGTERM, its normal stop"},
			{"version", "printed"},
		}},
		{ExitFindings, "a verdict that fails: findings, stuck, or something not done", []CommandMeaning{
			{"check", "a finding at or above --fail-on"},
			{"preflight", "a rollout the apply starts would not finish by itself (an error finding, an ImageStream tag not imported yet, OnDelete pods left on an older revision: what wait would wait on forever), or a finding at or above --fail-on"},
			{"explain", "the rollout is stuck"},
			{"fix", "something left unrepaired, skipped or refused (a forbidden write or a PodDisruptionBudget included), a patch the controller never observed, or no consent (no --yes and no terminal, or not answered yes)"},
			{"wait", "stuck (a finding held for --hold), rolled back (--fix --rollback: RolledBack), or a patch the controller never observed (--fix: NotObserved)"},
			{"canary", "rolled back, stuck (--no-rollback), stopped by someone else's edit (Stopped), or no consent (no --yes and no terminal, or not answered yes)"},
			{"migrate", "refused (a change it cannot make, a GitOps manager, a rollout under way), not finished (a finalizer, the controller, --timeout), or no consent; --status: a migration under way"},
		}},
		{ExitError, "no verdict: bad input or the cluster could not be read", []CommandMeaning{
			{"every command", "bad flags or arguments, unreadable kubeconfig, unknown context, API server unreachable, a read forbidden, namespace or StatefulSet not found; one error: line on stderr"},
			{"check", "also a fleet member (--contexts, --cluster-profiles) that could not be checked: the document lists it and says partial"},
			{"preflight", "also manifests that cannot be read or decoded, or a dry run the API server refused for lack of permission (deploy/preflight-clusterrole.yaml)"},
			{"wait", "also a StatefulSet deleted while waiting (NotFound) or no longer readable (Unevaluable)"},
			{"canary", "also a StatefulSet a canary cannot step (OnDelete, nothing to roll out), an analysis template it cannot run"},
		}},
		{ExitTimeout, "timed out while the rollout was still progressing", []CommandMeaning{
			{"wait", "--timeout passed"},
			{"canary", "--timeout passed"},
			{"fix", "--wait's --timeout passed"},
		}},
		{ExitInconclusive, "a canary's analysis could not tell", []CommandMeaning{
			{"canary", "--analysis could not tell (Prometheus unreachable, no data, neither condition held beyond its limit): the canary paused where it was, nothing rolled back or forward (Inconclusive)"},
		}},
		{ExitInterrupted, "interrupted by SIGINT or SIGTERM", []CommandMeaning{
			{"every command but watch", "a signal, whatever was under way (fix's and canary's question included); watch stops with 0"},
		}},
	}
}

// exitCodesHelp is the "Exit codes:" paragraph of command's --help (all of them for the root,
// command "").
func exitCodesHelp(command string) string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, e := range ExitCodes() {
		var says []string
		for _, on := range e.On {
			switch {
			case command == "":
				says = []string{e.Meaning}
			case on.Command == command:
				says = append(says, on.Meaning)
			case strings.HasPrefix(on.Command, "every command") && !(on.Command == "every command but watch" && command == "watch"):
				says = append(says, on.Meaning)
			}
		}
		if len(says) > 0 {
			fmt.Fprintf(&b, "\n  %3d  %s", e.Code, strings.Join(says, "; "))
		}
	}
	return b.String()
}

// OutputAliases are the former -o values a command still accepts (former → format): wait's and
// canary's "text", now "table".
func OutputAliases(command string) map[string]string {
	switch command {
	case "wait", "canary":
		return map[string]string{"text": render.FormatTable}
	}
	return nil
}

func withOutputAliases(p *render.PrintFlags, command string, notices io.Writer) *render.PrintFlags {
	for former, format := range OutputAliases(command) {
		p.WithAlias(former, format, notices)
	}
	return p
}
