// Command peakrss runs a command and reports its own peak RSS and wall time on the last line of
// stderr: "peakrss: wall=<seconds> maxrss_kib=<KiB>".
//
// The bench cannot read a child's peak RSS from os/exec's rusage: Linux starts a child's maxrss
// from the memory map it had before exec (exec_mmap saves the old mm's high-water mark,
// fs/exec.c), and Go forks with CLONE_VM|CLONE_VFORK, so that old map is the bench's own, and a
// 500 MiB bench made `true` read 515 MiB. This wrapper is small: a child it starts inherits only
// its few MiB (the bench proves it with `true` as a control).
//
//	peakrss kubectl get pods -A -o json
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss command [args...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	if err != nil {
		code = 1
		if cmd.ProcessState == nil {
			fmt.Fprintln(os.Stderr, "peakrss:", err)
			os.Exit(127)
		}
		code = cmd.ProcessState.ExitCode()
	}
	var kib int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		kib = ru.Maxrss
	}
	fmt.Fprintf(os.Stderr, "peakrss: wall=%.4f maxrss_kib=%d\n", wall.Seconds(), kib)
	os.Exit(code)
}
