package stuck

import (
	"fmt"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

// controllerManager words ControllerManagerNotRunning.
func (w words) controllerManager(l facts.LeaseStale) {
	f := w.f
	by := "released by its last holder"
	if l.Holder != "" {
		by = "held by " + l.Holder
	}
	f.Message = fmt.Sprintf("kube-controller-manager's leader Lease %s has not been renewed for %s (%s, lease duration %s): no kube-controller-manager runs the StatefulSet controller, so no rollout in the cluster progresses and every StatefulSet status is stale",
		f.Details.Lease, l.For, by, l.Duration)
	f.Short = fmt.Sprintf("kube-controller-manager not running: leader Lease not renewed for %s", l.For)
	if w.cli == "oc" {
		f.Remedy = "find why kube-controller-manager stopped: oc get clusteroperator kube-controller-manager; oc get pods -n openshift-kube-controller-manager, and their logs; rollouts resume once an instance leads again"
		return
	}
	f.Remedy = "find why kube-controller-manager stopped: kubectl get pods -n kube-system -l component=kube-controller-manager (or its service on the control-plane nodes), and its logs; rollouts resume once an instance leads again"
}
