package gather

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stsdiag/stsdiag/internal/model"
)

// PreviousLogs adds to each finding about a container that exited (it has a last exit code) the
// last n lines of that container's previous run: one GET of pods/log per container, and only
// for findings. A log that cannot be read becomes a warning naming it.
func PreviousLogs(ctx context.Context, kube kubernetes.Interface, findings []model.Finding, n int64) (warnings []string) {
	read := map[string][]string{}
	for i := range findings {
		f := &findings[i]
		if f.Pod == "" || f.Container == "" || f.Details.LastExitCode == nil {
			continue
		}
		key := f.Namespace + "/" + f.Pod + "/" + f.Container
		lines, ok := read[key]
		if !ok {
			var err error
			lines, err = previousLog(ctx, kube, f.Namespace, f.Pod, f.Container, n)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("no previous log of pod %s container %s: %v", f.Pod, f.Container, firstLine(err)))
			}
			read[key] = lines
		}
		f.Details.Logs = lines
	}
	return warnings
}

func previousLog(ctx context.Context, kube kubernetes.Interface, namespace, pod, container string, n int64) ([]string, error) {
	body, err := kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true, TailLines: &n}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, nil
}
