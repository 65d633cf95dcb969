package cluster

import (
	"fmt"
	"syscall"
)

// PauseControllerManager stops kube-controller-manager with SIGSTOP, as a loaded machine or a
// long GC pause would: its controllers observe nothing until ResumeControllerManager. The API
// server keeps answering. Tests that pause it must not run in parallel with others.
func (c *Cluster) PauseControllerManager() error {
	return c.signal("kube-controller-manager", syscall.SIGSTOP)
}

// ResumeControllerManager continues a paused kube-controller-manager (SIGCONT).
func (c *Cluster) ResumeControllerManager() error {
	return c.signal("kube-controller-manager", syscall.SIGCONT)
}

// ControllerManagerExited reports whether kube-controller-manager exited, and how: with leader
// election, one that finds it could not renew its Lease in time stops (klog.Fatal on
// OnStoppedLeading), as it may after a long pause.
func (c *Cluster) ControllerManagerExited() (bool, error) {
	for _, p := range c.procs {
		if p.name == "kube-controller-manager" {
			select {
			case <-p.done:
				return true, p.err
			default:
				return false, nil
			}
		}
	}
	return false, fmt.Errorf("kube-controller-manager was not started")
}

// RestartControllerManager starts kube-controller-manager again with the same flags once it
// exited, as the kubelet restarts the static pod of a real control plane.
func (c *Cluster) RestartControllerManager() error {
	for i, p := range c.procs {
		if p.name != "kube-controller-manager" {
			continue
		}
		select {
		case <-p.done:
		default:
			return fmt.Errorf("kube-controller-manager (pid %d) is running", p.cmd.Process.Pid)
		}
		c.procs = append(c.procs[:i], c.procs[i+1:]...)
		return c.start(p.name, p.bin, p.args...)
	}
	return fmt.Errorf("kube-controller-manager was not started")
}

func (c *Cluster) signal(name string, sig syscall.Signal) error {
	for _, p := range c.procs {
		if p.name == name {
			// The process group: the binary has no children, but this is how stop signals it.
			return syscall.Kill(-p.cmd.Process.Pid, sig)
		}
	}
	return fmt.Errorf("%s is not running", name)
}
