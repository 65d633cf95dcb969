package gather

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck"
)

// PreviousLogs adds to each finding about a container that exited (it has a last exit code) the
// last n lines of the run that exited last: one GET of pods/log per container, and only for
// findings. That run is the previous one (`--previous`) while the container runs again or waits
// to; while the container is terminated it is the current one, and the kubelet's previous one
// is older or missing (validateContainerLogStatus, kubelet_pods.go:1563-1583@v1.37.2). A log that
// cannot be read becomes a warning naming it.
func PreviousLogs(ctx context.Context, kube kubernetes.Interface, findings []stuck.Finding, n int64) (warnings []string) {
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
			lines, err = lastRunLog(ctx, kube, f.Namespace, f.Pod, f.Container, !f.LogCurrent, n)
			if err != nil {
				which := "previous log"
				if f.LogCurrent {
					which = "log of the exited run"
				}
				warnings = append(warnings, fmt.Sprintf("no %s of pod %s container %s: %v", which, f.Pod, f.Container, text.FirstLine(err)))
			}
			read[key] = lines
		}
		f.Details.Logs = lines
	}
	return warnings
}

func lastRunLog(ctx context.Context, kube kubernetes.Interface, namespace, pod, container string, previous bool, n int64) ([]string, error) {
	body, err := kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &n}).DoRaw(ctx)
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
