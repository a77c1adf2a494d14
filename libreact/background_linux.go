package main

import (
	"runtime"
	"syscall"
)

// tunerNice is the scheduling priority of the leader's tuners' thread.
// The tuners share the leader's CPU with the training step, and on a host
// with no idle core every millisecond a search takes is a millisecond the
// step waits, at every rank, since the others wait for the leader. At nice
// 10 a search takes about a tenth of a core a busy step would have had; at
// 19 (a sixtieth) a 4-rank test on a machine with a load of 9 on 2 cores
// got no decision within its 30 calls in 3 runs of 4, at 10 it did in 4 of
// 4.
const tunerNice = 10

// background lowers the calling goroutine's thread to tunerNice, for good:
// the goroutine stays on it (a locked thread ends with its goroutine, so
// no other goroutine inherits the priority).
func background() error {
	runtime.LockOSThread()
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), tunerNice)
}
