package main

/*
#include "react.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"os"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/react-torch/react-torch/internal/leader"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"
)

// leaderHandle is a group leader's tuners behind a handle, with what a
// caller retrying with a larger buffer must get again: the decisions
// taken but not yet copied out, and the last report.
type leaderHandle struct {
	l *leader.Leader

	mu       sync.Mutex
	closed   bool
	pending  []byte // encoded decisions not yet delivered
	report   []byte
	reportAt int64
}

func leaderOf(who string, h C.uint64_t) (lh *leaderHandle, st C.int) {
	func() {
		defer func() {
			if recover() != nil {
				lh = nil
			}
		}()
		lh, _ = cgo.Handle(h).Value().(*leaderHandle)
	}()
	if lh == nil {
		return nil, fail(C.REACT_E_HANDLE, "%s: unknown or closed leader handle %d", who, uint64(h))
	}
	lh.mu.Lock()
	closed := lh.closed
	lh.mu.Unlock()
	if closed {
		return nil, fail(C.REACT_E_HANDLE, "%s: unknown or closed leader handle %d", who, uint64(h))
	}
	return lh, C.REACT_OK
}

//export react_go_leader_create
func react_go_leader_create(h *C.uint64_t) (st C.int) {
	defer guard(&st)
	if h == nil {
		return fail(C.REACT_E_ARG, "react_leader_create: handle pointer is NULL")
	}
	log := logger.Load()
	if log == nil {
		log = zap.NewNop()
	}
	*h = C.uint64_t(cgo.NewHandle(&leaderHandle{l: leader.New(log), reportAt: -1}))
	return C.REACT_OK
}

//export react_go_leader_key
func react_go_leader_key(h C.uint64_t, key C.int, pat *C.uint8_t, plen C.size_t, version C.int, msgBytes C.double,
	config *C.char, logPath *C.char) (st C.int) {
	defer guard(&st)
	const who = "react_leader_key"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	p, st := decodePattern(who, pat, plen)
	if st != C.REACT_OK {
		return st
	}
	if config == nil {
		return fail(C.REACT_E_ARG, "%s: config_json is NULL", who)
	}
	c, err := parseConfig(C.GoString(config))
	if err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	k := leader.Key{Name: c.key, Label: c.label, MessageBytes: float64(msgBytes), Config: c.tuner}
	if k.Name == nil {
		k.Name = json.RawMessage("null")
	}
	if logPath != nil && C.GoString(logPath) != "" {
		f, err := os.Create(C.GoString(logPath))
		if err != nil {
			return fail(C.REACT_E_ARG, "%s: FCT log: %v", who, err)
		}
		k.Log = f
	}
	if err := lh.l.AddKey(int(key), k, int(version), p); err != nil {
		if k.Log != nil {
			k.Log.Close()
		}
		return fail(C.REACT_E_ARG, "%s: %v", who, err)
	}
	return C.REACT_OK
}

//export react_go_leader_exchange
func react_go_leader_exchange(h C.uint64_t, layout *C.int64_t, nlayout C.size_t, values *C.double, nvalues C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_leader_exchange"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	if (layout == nil && nlayout > 0) || (values == nil && nvalues > 0) {
		return fail(C.REACT_E_ARG, "%s: layout or values is NULL", who)
	}
	var ly []int64
	var vs []float64
	if nlayout > 0 {
		ly = unsafe.Slice((*int64)(unsafe.Pointer(layout)), int(nlayout))
	}
	if nvalues > 0 {
		vs = unsafe.Slice((*float64)(unsafe.Pointer(values)), int(nvalues))
	}
	if err := lh.l.Exchange(ly, vs); err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	return C.REACT_OK
}

//export react_go_leader_decisions
func react_go_leader_decisions(h C.uint64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_leader_decisions"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	lh.mu.Lock()
	defer lh.mu.Unlock()
	if lh.pending == nil {
		decs := lh.l.Decisions()
		rows := make([][]any, len(decs))
		for i, d := range decs {
			rows[i] = []any{d.Key, d.Version, d.Effective, d.Pattern}
		}
		b, err := msgpack.Marshal(rows)
		if err != nil {
			return fail(C.REACT_E_PANIC, "%s: %v", who, err)
		}
		lh.pending = b
	}
	if st := out(lh.pending, buf, cap, n); st != C.REACT_OK {
		return st
	}
	lh.pending = nil
	return C.REACT_OK
}

//export react_go_leader_reset
func react_go_leader_reset(h C.uint64_t, key C.int) (st C.int) {
	defer guard(&st)
	const who = "react_leader_reset"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	if err := lh.l.Reset(int(key)); err != nil {
		return fail(C.REACT_E_ARG, "%s: %v", who, err)
	}
	return C.REACT_OK
}

//export react_go_leader_report
func react_go_leader_report(h C.uint64_t, exchange C.int64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_leader_report"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	if n == nil || exchange < 0 || exchange > math.MaxInt32 {
		return fail(C.REACT_E_ARG, "%s: len is NULL or exchange %d out of range", who, int64(exchange))
	}
	lh.mu.Lock()
	defer lh.mu.Unlock()
	if lh.reportAt != int64(exchange) || lh.report == nil {
		b, err := lh.l.Report(int(exchange))
		if err != nil {
			return fail(C.REACT_E_PANIC, "%s: %v", who, err)
		}
		lh.report, lh.reportAt = b, int64(exchange)
	}
	return out(lh.report, buf, cap, n)
}

//export react_go_leader_close
func react_go_leader_close(h C.uint64_t) (st C.int) {
	defer guard(&st)
	const who = "react_leader_close"
	lh, st := leaderOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	lh.mu.Lock()
	lh.closed = true
	lh.mu.Unlock()
	err := lh.l.Close()
	cgo.Handle(h).Delete()
	if err != nil {
		return fail(C.REACT_E_ARG, "%s: FCT log: %v", who, err)
	}
	return C.REACT_OK
}
