package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startProfiles writes a CPU profile to $STSDIAG_CPUPROFILE and, when the command ends, a heap
// profile (allocations and what is in use) to $STSDIAG_HEAPPROFILE, for the benchmark (make
// bench PROFILE=1). The returned function ends them.
func startProfiles(errOut io.Writer) func() {
	cpu, heap := os.Getenv("STSDIAG_CPUPROFILE"), os.Getenv("STSDIAG_HEAPPROFILE")
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(errOut, "stsdiag: CPU profile: %v\n", err)
		} else {
			cpuFile = f
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			_ = cpuFile.Close()
		}
		if heap != "" {
			f, err := os.Create(heap)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
			if err != nil {
				fmt.Fprintf(errOut, "stsdiag: heap profile: %v\n", err)
			}
		}
	}
}
