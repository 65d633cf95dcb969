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

func (c *Cluster) signal(name string, sig syscall.Signal) error {
	for _, p := range c.procs {
		if p.name == name {
			// The process group: the binary has no children, but this is how stop signals it.
			return syscall.Kill(-p.cmd.Process.Pid, sig)
		}
	}
	return fmt.Errorf("%s is not running", name)
}
