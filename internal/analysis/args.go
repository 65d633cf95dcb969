package analysis

// Argument handling as argo-rollouts 9f8d111d8f8e does it: utils/analysis/helpers.go (MergeArgs,
// ResolveArgs), utils/analysis/factory.go (ResolveMetricArgs) and utils/template/template.go
// (ResolveArgs, ResolveQuotedArgs, and fasttemplate's {{ }} tags).

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Bind returns the template with its arguments substituted, as Argo builds an AnalysisRun:
//   - an argument's value in the template is its default; a value in given replaces it;
//   - given names the template does not declare are ignored (Argo's MergeArgs drops them);
//   - an argument left without a value is a *MissingArgError, even if no metric uses it;
//   - {{args.NAME}} (spaces inside the braces allowed) is replaced in every string of every
//     metric: name, conditions, query, address, headers, and count, interval or limits given
//     as strings; a placeholder naming no argument is an error;
//   - the bound metrics are then checked as Argo's ValidateMetrics checks them.
func (t *Template) Bind(given map[string]string) (*Template, error) {
	args := mergeArgs(t.Args, given)
	for _, a := range args {
		if a.Value == nil {
			return nil, &MissingArgError{Template: t.Name, Name: a.Name}
		}
	}
	out := &Template{Name: t.Name, Kind: t.Kind, Args: args}
	for i, rm := range t.raw {
		resolved, err := resolveMetricArgs(rm, args)
		if err != nil {
			return nil, fmt.Errorf("analysis template %s: metrics[%d]: %w", t.Name, i, err)
		}
		m, err := convertMetric(resolved, true)
		if err != nil {
			return nil, fmt.Errorf("analysis template %s: metrics[%d]: %w", t.Name, i, err)
		}
		out.raw = append(out.raw, resolved)
		out.Metrics = append(out.Metrics, m)
	}
	if err := validateMetrics(out.Metrics, nil); err != nil {
		return nil, fmt.Errorf("analysis template %s: %w", t.Name, err)
	}
	return out, nil
}

// mergeArgs is Argo's MergeArgs for plain values: a copy of the template's args, each given
// value replacing the template's.
func mergeArgs(templateArgs []Arg, given map[string]string) []Arg {
	out := make([]Arg, len(templateArgs))
	for i, a := range templateArgs {
		out[i] = Arg{Name: a.Name}
		if a.Value != nil {
			v := *a.Value
			out[i].Value = &v
		}
		if v, ok := given[a.Name]; ok {
			out[i].Value = &v
		}
	}
	return out
}

// resolveMetricArgs is Argo's ResolveMetricArgs: substitute in the metric's JSON, quoting the
// values for JSON, and decode it again.
func resolveMetricArgs(m rawMetric, args []Arg) (rawMetric, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return rawMetric{}, err
	}
	s, err := resolveQuotedArgs(string(b), args)
	if err != nil {
		return rawMetric{}, err
	}
	var out rawMetric
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return rawMetric{}, err
	}
	return out, nil
}

// resolveArgs substitutes {{args.NAME}} in template.
func resolveArgs(template string, args []Arg) (string, error) {
	argsMap := make(map[string]string, len(args))
	for _, a := range args {
		if a.Value == nil {
			return "", fmt.Errorf("argument \"%s\" was not supplied", a.Name)
		}
		argsMap["args."+a.Name] = *a.Value
	}
	return resolve(template, argsMap)
}

// resolveQuotedArgs escapes the values (newlines, quotes, …) for a JSON string first.
func resolveQuotedArgs(template string, args []Arg) (string, error) {
	quoted := make([]Arg, len(args))
	for i, a := range args {
		quoted[i] = Arg{Name: a.Name}
		if a.Value != nil {
			r := strconv.Quote(*a.Value)
			r = r[1 : len(r)-1]
			quoted[i].Value = &r
		}
	}
	return resolveArgs(template, quoted)
}

// resolve does what fasttemplate.NewTemplate(t, "{{", "}}").ExecuteFuncString does in Argo's
// resolve: an unclosed tag is an error; an unknown tag becomes "" and the last one is reported.
func resolve(template string, argsMap map[string]string) (string, error) {
	const openTag, closeTag = "{{", "}}"
	var b strings.Builder
	var unresolvedErr error
	s := template
	for {
		n := strings.Index(s, openTag)
		if n < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:n])
		s = s[n+len(openTag):]
		n = strings.Index(s, closeTag)
		if n < 0 {
			return "", fmt.Errorf("Cannot find end tag=%q in the template=%q starting from %q", closeTag, template, s)
		}
		tag := s[:n]
		s = s[n+len(closeTag):]
		if v, ok := argsMap[strings.TrimSpace(tag)]; ok {
			b.WriteString(v)
		} else {
			unresolvedErr = fmt.Errorf("failed to resolve {{%s}}", tag)
		}
	}
	return b.String(), unresolvedErr
}
