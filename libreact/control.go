package main

/*
#include "react.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	"github.com/react-torch/react-torch/internal/control"
	"github.com/react-torch/react-torch/internal/leader"
	"go.uber.org/zap"
)

// controlHandle is one rank's control plane of one group. On the leader
// it also holds the group's tuners, which take each exchange on a
// goroutine of their own: a decision that takes long rides on a later
// answer instead of holding this one.
type controlHandle struct {
	mu     sync.Mutex
	closed bool
	p      *control.Plane
	log    *zap.Logger

	// leader only
	l       *leader.Leader
	jobs    chan job
	done    chan struct{} // closed when the goroutine has stopped
	tuned   int           // the last exchange the tuners took
	tuneErr error
	changed chan struct{} // closed and replaced when tuned or tuneErr change
	report  []byte        // made by the tuners, not yet sent
	answers map[int][]byte

	accepted  int // the last exchange accepted, and what Accept said of it
	refusals  []byte
	acceptOut [2]int64
}

// job is an exchange for the tuners (reset < 0), or a key to restart.
type job struct {
	x      int
	layout []int64
	values []float64
	want   bool
	reset  int
}

func controlOf(who string, h C.uint64_t) (ch *controlHandle, st C.int) {
	func() {
		defer func() {
			if recover() != nil {
				ch = nil
			}
		}()
		ch, _ = cgo.Handle(h).Value().(*controlHandle)
	}()
	if ch == nil {
		return nil, fail(C.REACT_E_HANDLE, "%s: unknown or closed control handle %d", who, uint64(h))
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil, fail(C.REACT_E_HANDLE, "%s: unknown or closed control handle %d", who, uint64(h))
	}
	return ch, C.REACT_OK // locked: the caller unlocks
}

// onControl runs f on h's plane, under its lock.
func onControl(who string, h C.uint64_t, f func(ch *controlHandle) C.int) C.int {
	ch, st := controlOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	defer ch.mu.Unlock()
	return f(ch)
}

type controlConfig struct {
	Batch    int  `json:"batch"`
	MinCalls int  `json:"min_calls"`
	Tuned    bool `json:"tuned"`
	Leader   bool `json:"leader"`
	// Hosts: a hierarchical group's ranks per host (its patterns run
	// over hosts, and its reports name them)
	Hosts [][]int `json:"hosts"`
}

//export react_go_control_create
func react_go_control_create(config *C.char, h *C.uint64_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_create"
	if config == nil || h == nil {
		return fail(C.REACT_E_ARG, "%s: config_json or handle is NULL", who)
	}
	var cc controlConfig
	if err := strictJSON(C.GoString(config), &cc); err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	p, err := control.New(control.Config{Batch: cc.Batch, MinCalls: cc.MinCalls, Tuned: cc.Tuned, Leader: cc.Leader})
	if err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	log := logger.Load()
	if log == nil {
		log = zap.NewNop()
	}
	ch := &controlHandle{p: p, log: log}
	if cc.Leader && cc.Tuned {
		// The tuners' goroutine keeps a P busy for a search; with one P
		// every react_control_* call of the collective thread would wait
		// for the scheduler to preempt it (up to 10 ms).
		if runtime.GOMAXPROCS(0) < 2 {
			runtime.GOMAXPROCS(2)
		}
		ch.l = leader.New(log, cc.Hosts)
		ch.jobs = make(chan job, 64)
		ch.done = make(chan struct{})
		ch.changed = make(chan struct{})
		ch.answers = map[int][]byte{}
		go ch.tune()
	}
	*h = C.uint64_t(cgo.NewHandle(ch))
	return C.REACT_OK
}

func strictJSON(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("config_json: " + err.Error())
	}
	if dec.More() {
		return errors.New("config_json: data after the object")
	}
	return nil
}

// tune is the leader's tuners' goroutine.
func (ch *controlHandle) tune() {
	defer close(ch.done)
	if err := background(); err != nil {
		ch.log.Debug("control: the tuners run at normal priority", zap.Error(err))
	}
	for j := range ch.jobs {
		if j.reset >= 0 {
			if err := ch.l.Reset(j.reset); err != nil {
				ch.log.Warn("control: reset", zap.Error(err))
			}
			continue
		}
		err := ch.l.Exchange(j.layout, j.values)
		var ds []leader.Decision
		var rep []byte
		if err == nil {
			ds = ch.l.Decisions()
			if j.want {
				if rep, err = ch.l.Report(j.x); err != nil {
					ch.log.Warn("control: no report", zap.Int("exchange", j.x), zap.Error(err))
					rep, err = nil, nil
				}
			}
		}
		ch.mu.Lock()
		made := make([]control.Decision, len(ds))
		for i, d := range ds {
			made[i] = control.Decision{Key: d.Key, Version: d.Version, Effective: d.Effective, Pattern: d.Pattern}
		}
		ch.p.Decided(made)
		if rep != nil {
			ch.report = rep
		}
		if err != nil && ch.tuneErr == nil {
			ch.tuneErr = err
		}
		ch.tuned = j.x
		close(ch.changed)
		ch.changed = make(chan struct{})
		ch.mu.Unlock()
	}
}

//export react_go_control_key
func react_go_control_key(h C.uint64_t, pat *C.uint8_t, plen C.size_t, numel C.int64_t, itemsize C.int, config *C.char,
	fctLog *C.char, id *C.int) (st C.int) {
	defer guard(&st)
	const who = "react_control_key"
	if id == nil || config == nil || numel < 0 || itemsize <= 0 {
		return fail(C.REACT_E_ARG, "%s: id or config_json NULL, or numel %d, itemsize %d: want >= 0 and > 0", who, int64(numel), int(itemsize))
	}
	p, st := decodePattern(who, pat, plen)
	if st != C.REACT_OK {
		return st
	}
	c, err := parseConfig(C.GoString(config))
	if err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		raw := append([]byte(nil), in(pat, plen)...)
		k := ch.p.AddKey(p, raw, int64(numel))
		if ch.l != nil {
			lk := leader.Key{Name: c.key, Label: c.label, MessageBytes: float64(max(numel, 1)) * float64(itemsize), Config: c.tuner}
			if lk.Name == nil {
				lk.Name = json.RawMessage("null")
			}
			if fctLog != nil && C.GoString(fctLog) != "" {
				path, err := leader.LogPath(C.GoString(fctLog), lk.Name)
				if err != nil {
					return fail(C.REACT_E_INVALID, "%s: %v", who, err)
				}
				f, err := os.Create(path)
				if err != nil {
					return fail(C.REACT_E_ARG, "%s: FCT log: %v", who, err)
				}
				lk.Log = f
			}
			if err := ch.l.AddKey(k, lk, 0, p); err != nil {
				if lk.Log != nil {
					lk.Log.Close()
				}
				return fail(C.REACT_E_INVALID, "%s: %v", who, err)
			}
		}
		*id = C.int(k)
		return C.REACT_OK
	})
}

//export react_go_control_begin
func react_go_control_begin(h C.uint64_t, id C.int, epoch, version *C.int64_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_begin"
	if epoch == nil || version == nil {
		return fail(C.REACT_E_ARG, "%s: epoch or version is NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		e, v, err := ch.p.Begin(int(id))
		if err != nil {
			return fail(C.REACT_E_ARG, "%s: %v", who, err)
		}
		*epoch, *version = C.int64_t(e), C.int64_t(v)
		return C.REACT_OK
	})
}

//export react_go_control_pattern
func react_go_control_pattern(h C.uint64_t, id C.int, version C.int64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_pattern"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		raw, err := ch.p.Pattern(int(id), int(version))
		if err != nil {
			return fail(C.REACT_E_ARG, "%s: %v", who, err)
		}
		return out(raw, buf, cap, n)
	})
}

// record views a record's arrays in caller memory (the plane copies what it keeps).
func record(flows *C.int64_t, arrivals *C.double, n C.size_t, elapsed C.double) (control.Record, bool) {
	r := control.Record{Elapsed: float64(elapsed), Entry: -1}
	if n == 0 {
		return r, true
	}
	if flows == nil || arrivals == nil {
		return r, false
	}
	r.Flows = unsafe.Slice((*int64)(unsafe.Pointer(flows)), int(n))
	r.Arrivals = unsafe.Slice((*float64)(unsafe.Pointer(arrivals)), int(n))
	return r, true
}

//export react_go_control_end
func react_go_control_end(h C.uint64_t, id C.int, flows *C.int64_t, arrivals *C.double, n C.size_t, elapsed C.double,
	entry C.int, entryAt C.double, deferred C.int, due *C.int64_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_end"
	r, ok := record(flows, arrivals, n, elapsed)
	if !ok || due == nil {
		return fail(C.REACT_E_ARG, "%s: flows, arrivals or due is NULL", who)
	}
	r.Entry, r.EntryAt, r.Deferred = int(entry), float64(entryAt), deferred != 0
	return onControl(who, h, func(ch *controlHandle) C.int {
		d, err := ch.p.End(int(id), r)
		if err != nil {
			return fail(C.REACT_E_INVALID, "%s: %v", who, err)
		}
		out := unsafe.Slice((*int64)(unsafe.Pointer(due)), 5)
		out[0], out[1], out[2], out[3], out[4] = 0, int64(d.X), int64(d.Need), int64(d.Next), 0
		if d.Recorded {
			out[0] = 1
		}
		if d.Ask {
			out[4] = 1
		}
		return C.REACT_OK
	})
}

//export react_go_control_report
func react_go_control_report(h C.uint64_t, ask C.int, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_report"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		if ask != 0 {
			ch.p.AskReport()
		}
		return out(ch.p.Report(), buf, cap, n)
	})
}

//export react_go_control_offset
func react_go_control_offset(h C.uint64_t, offset C.double) (st C.int) {
	defer guard(&st)
	const who = "react_control_offset"
	if math.IsNaN(float64(offset)) || math.IsInf(float64(offset), 0) {
		return fail(C.REACT_E_ARG, "%s: offset %v", who, float64(offset))
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		ch.p.SetOffset(float64(offset))
		return C.REACT_OK
	})
}

//export react_go_control_stats
func react_go_control_stats(h C.uint64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_stats"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		type keyStats struct {
			Epoch    int  `json:"epoch"`
			Version  int  `json:"version"`
			Switches int  `json:"switches"`
			Refused  int  `json:"refused"`
			Tuned    bool `json:"tuned"`
		}
		var s struct {
			Exchanges int        `json:"exchanges"`
			Depth     int        `json:"depth"`
			Keys      []keyStats `json:"keys"`
		}
		s.Exchanges, s.Depth, s.Keys = ch.p.Replied(), control.Depth, []keyStats{}
		for _, k := range ch.p.Stats() {
			s.Keys = append(s.Keys, keyStats{k.Epoch, k.Version, k.Switches, k.Refused, k.Tuned})
		}
		b, err := json.Marshal(s)
		if err != nil {
			return fail(C.REACT_E_PANIC, "%s: %v", who, err)
		}
		return out(b, buf, cap, n)
	})
}

//export react_go_control_close
func react_go_control_close(h C.uint64_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_close"
	ch, st := controlOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	ch.closed = true
	ch.mu.Unlock()
	cgo.Handle(h).Delete()
	if ch.l == nil {
		return C.REACT_OK
	}
	close(ch.jobs)
	<-ch.done
	if err := ch.l.Close(); err != nil {
		return fail(C.REACT_E_ARG, "%s: FCT log: %v", who, err)
	}
	return C.REACT_OK
}
