package main

import (
	"runtime"
	"syscall"
)

// tunerNice is the scheduling priority of the leader's tuners' thread.
// The tuners share the leader's CPU with the training step, and on a host
// with no idle core every millisecond a search takes is a millisecond the
// step waits, at every rank, since the others wait for the leader. At
// nice 19 a search runs on idle CPU time and yields to the step; when
// there is none it takes longer and its decision rides on a later answer.
const tunerNice = 19

// background lowers the calling goroutine's thread to tunerNice, for good:
// the goroutine stays on it (a locked thread ends with its goroutine, so
// no other goroutine inherits the priority).
func background() error {
	runtime.LockOSThread()
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), tunerNice)
}
