package render

import (
	"fmt"
	"io"
	"os"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck"
)

// GitHubActions is the CI-native output of check and wait inside a GitHub Actions job: one
// workflow command per error (::error) and warning (::warning) finding, which the runner turns
// into annotations on the run, and a Markdown table appended to the job's step summary.
type GitHubActions struct {
	// Enabled is true when GITHUB_ACTIONS=true (the runner sets it in every step).
	Enabled bool
	// SummaryPath is $GITHUB_STEP_SUMMARY ("" when unset: no summary is written).
	SummaryPath string
}

// GitHubFromEnv reads GITHUB_ACTIONS and GITHUB_STEP_SUMMARY through getenv (os.Getenv).
func GitHubFromEnv(getenv func(string) string) GitHubActions {
	if getenv == nil {
		getenv = os.Getenv
	}
	return GitHubActions{Enabled: getenv("GITHUB_ACTIONS") == "true", SummaryPath: getenv("GITHUB_STEP_SUMMARY")}
}

// Report writes the annotations of a check report to w (stderr: the runner reads workflow
// commands from both streams, and stdout stays the document asked for) and appends its summary.
func (g GitHubActions) Report(w io.Writer, r *model.Report) error {
	if !g.Enabled {
		return nil
	}
	if err := WriteAnnotations(w, r.Findings); err != nil {
		return err
	}
	return g.appendSummary(func(s io.Writer) error { return StepSummary(s, "stsdiag check", Summary(r), r.Findings) })
}

// WaitResult writes the annotations of wait's verdict to w and appends its summary.
func (g GitHubActions) WaitResult(w io.Writer, res *model.WaitResult) error {
	if !g.Enabled {
		return nil
	}
	if err := WriteAnnotations(w, res.Findings); err != nil {
		return err
	}
	verdict := fmt.Sprintf("**%s** after %s: %s", res.Result, res.Elapsed, res.Message)
	return g.appendSummary(func(s io.Writer) error { return StepSummary(s, "stsdiag wait", verdict, res.Findings) })
}

func (g GitHubActions) appendSummary(write func(io.Writer) error) error {
	if g.SummaryPath == "" {
		return nil
	}
	f, err := os.OpenFile(g.SummaryPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	return nil
}

// WriteAnnotations prints one workflow command per error or warning finding:
//
//	::error title=<code>::<namespace>/<statefulset>[/<pod>]: <message> — <remedy>
//
// Info findings are not annotated (the step summary lists them).
func WriteAnnotations(w io.Writer, findings []stuck.Finding) error {
	for _, f := range findings {
		var command string
		switch f.Severity {
		case apiv1.SeverityError:
			command = "error"
		case apiv1.SeverityWarning:
			command = "warning"
		default:
			continue
		}
		line := findingPath(f) + ": " + text.OneLine(f.Message)
		if f.Remedy != "" {
			line += " — " + text.OneLine(f.Remedy)
		}
		if _, err := fmt.Fprintf(w, "::%s title=%s::%s\n", command, escapeProperty(string(f.Code)), escapeData(line)); err != nil {
			return err
		}
	}
	return nil
}

// StepSummary writes a Markdown section: a heading, the verdict line and a table of findings.
func StepSummary(w io.Writer, heading, verdict string, findings []stuck.Finding) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s\n\n", heading, verdict)
	if len(findings) > 0 {
		b.WriteString("| Severity | Code | StatefulSet | Pod | Message | Remedy |\n|---|---|---|---|---|---|\n")
		for _, f := range findings {
			remedy := ""
			if f.Remedy != "" {
				remedy = "`" + strings.ReplaceAll(text.OneLine(f.Remedy), "`", "'") + "`"
			}
			message := f.Short
			if message == "" {
				message = f.Message
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", severityMark(f.Severity), markdownCell(string(f.Code)),
				markdownCell(setPath(f)), markdownCell(dash(f.Pod)), markdownCell(message), strings.ReplaceAll(remedy, "|", `\|`))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// setPath is [context/]namespace/statefulset; findingPath adds /pod.
func setPath(f stuck.Finding) string {
	return f.Namespace + "/" + f.StatefulSet
}

func findingPath(f stuck.Finding) string {
	if f.Pod != "" {
		return setPath(f) + "/" + f.Pod
	}
	return setPath(f)
}

func severityMark(s apiv1.Severity) string {
	switch s {
	case apiv1.SeverityError:
		return "🔴 error"
	case apiv1.SeverityWarning:
		return "🟡 warning"
	}
	return "ℹ️ " + string(s)
}

func markdownCell(s string) string {
	s = text.OneLine(s)
	for _, r := range []string{`\`, "|", "<", ">", "`", "*", "_", "[", "]"} {
		s = strings.ReplaceAll(s, r, `\`+r)
	}
	return s
}

// escapeData and escapeProperty follow the runner's escaping of workflow command values
// (actions/toolkit core/src/command.ts).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
