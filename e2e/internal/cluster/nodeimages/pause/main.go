// Command pause is the sandbox ("pause") image of the real-node e2e suite: it blocks until it is
// terminated, as registry.k8s.io/pause does, so no image has to come from outside this machine.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
