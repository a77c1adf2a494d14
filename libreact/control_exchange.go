package main

/*
#include "react.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"time"
	"unsafe"
)

// The group exchange of a batch's records, seen from one rank: send its
// record, fill and read the rows, the leader's answer, the call check and
// the accept vote (docs/runtime.md, "The exchange").

//export react_go_control_send
func react_go_control_send(h C.uint64_t, at C.double, xd *C.int64_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_send"
	if xd == nil {
		return fail(C.REACT_E_ARG, "%s: out is NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		x, d, err := ch.p.Send(float64(at))
		if err != nil {
			return fail(C.REACT_E_STATE, "%s: %v", who, err)
		}
		out := unsafe.Slice((*int64)(unsafe.Pointer(xd)), 2)
		out[0], out[1] = int64(x), int64(d)
		return C.REACT_OK
	})
}

//export react_go_control_fill
func react_go_control_fill(h C.uint64_t, x, i C.int64_t, flows *C.int64_t, arrivals *C.double, n C.size_t, elapsed C.double) (st C.int) {
	defer guard(&st)
	const who = "react_control_fill"
	r, ok := record(flows, arrivals, n, elapsed)
	if !ok {
		return fail(C.REACT_E_ARG, "%s: flows or arrivals is NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		if err := ch.p.Fill(int(x), int(i), r); err != nil {
			return fail(C.REACT_E_INVALID, "%s: %v", who, err)
		}
		return C.REACT_OK
	})
}

//export react_go_control_row
func react_go_control_row(h C.uint64_t, x C.int64_t, buf *C.double, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_row"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		row, err := ch.p.Row(int(x))
		if err != nil {
			return fail(C.REACT_E_STATE, "%s: %v", who, err)
		}
		*n = C.size_t(len(row))
		if buf == nil || int(cap) < len(row) {
			return fail(C.REACT_E_SHORT, "%s: buffer of %d values, %d needed", who, int(cap), len(row))
		}
		copy(unsafe.Slice((*float64)(unsafe.Pointer(buf)), len(row)), row)
		return C.REACT_OK
	})
}

//export react_go_control_take
func react_go_control_take(h C.uint64_t, x C.int64_t, values *C.double, n C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_take"
	if values == nil || n == 0 {
		return fail(C.REACT_E_ARG, "%s: values is NULL or empty", who)
	}
	ch, st := controlOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	tuners := ch.l != nil
	ly, err := ch.p.Layout(int(x))
	ch.mu.Unlock()
	if !tuners {
		return fail(C.REACT_E_STATE, "%s: not a tuned group's leader", who)
	}
	if err != nil {
		return fail(C.REACT_E_STATE, "%s: %v", who, err)
	}
	vs := append([]float64(nil), unsafe.Slice((*float64)(unsafe.Pointer(values)), int(n))...)
	for i, v := range vs {
		if math.IsInf(v, -1) { // no rank gave one
			vs[i] = math.NaN()
		}
	}
	ch.jobs <- job{x: int(x), layout: ly, values: vs[:n-1], want: vs[n-1] > 0, reset: -1} // outside the lock: the tuners take it
	return C.REACT_OK
}

//export react_go_control_answer
func react_go_control_answer(h C.uint64_t, x C.int64_t, now C.double, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_answer"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		if ch.l == nil {
			return fail(C.REACT_E_STATE, "%s: not a tuned group's leader", who)
		}
		body, ok := ch.answers[int(x)]
		if !ok {
			dl, err := ch.p.Deadline(int(x))
			if err != nil {
				return fail(C.REACT_E_STATE, "%s: %v", who, err)
			}
			deadline := time.Now().Add(time.Duration((dl - float64(now)) * float64(time.Second)))
			for ch.tuned < int(x) && ch.tuneErr == nil {
				left := time.Until(deadline)
				if left <= 0 {
					break
				}
				changed := ch.changed
				ch.mu.Unlock()
				t := time.NewTimer(left)
				select {
				case <-changed:
				case <-t.C:
				}
				t.Stop()
				ch.mu.Lock()
			}
			if ch.tuneErr != nil {
				return fail(C.REACT_E_INVALID, "%s: the leader's tuners failed: %v", who, ch.tuneErr)
			}
			body, err = ch.p.Answer(int(x), ch.report)
			if err != nil {
				return fail(C.REACT_E_PANIC, "%s: %v", who, err)
			}
			ch.report = nil
			ch.answers[int(x)] = body
		}
		if st := out(body, buf, cap, n); st != C.REACT_OK {
			return st
		}
		delete(ch.answers, int(x))
		return C.REACT_OK
	})
}

//export react_go_control_check
func react_go_control_check(h C.uint64_t, x C.int64_t, body *C.uint8_t, nbody C.size_t, ok *C.int64_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_check"
	if body == nil || n == nil {
		return fail(C.REACT_E_ARG, "%s: body or len is NULL", who)
	}
	return onControl(who, h, func(ch *controlHandle) C.int {
		verdicts, err := ch.p.Check(int(x), in(body, nbody))
		if err != nil {
			return fail(C.REACT_E_INVALID, "%s: %v", who, err)
		}
		*n = C.size_t(len(verdicts))
		if len(verdicts) > 0 && (ok == nil || int(cap) < len(verdicts)) {
			return fail(C.REACT_E_SHORT, "%s: room for %d verdicts, %d needed", who, int(cap), len(verdicts))
		}
		if len(verdicts) > 0 {
			o := unsafe.Slice((*int64)(unsafe.Pointer(ok)), len(verdicts))
			for i, v := range verdicts {
				o[i] = 0
				if v {
					o[i] = 1
				}
			}
		}
		return C.REACT_OK
	})
}

//export react_go_control_accept
func react_go_control_accept(h C.uint64_t, x C.int64_t, votes *C.int64_t, nvotes C.size_t, result *C.int64_t,
	buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_control_accept"
	if (votes == nil && nvotes > 0) || result == nil || n == nil {
		return fail(C.REACT_E_ARG, "%s: votes, result or len is NULL", who)
	}
	ch, st := controlOf(who, h)
	if st != C.REACT_OK {
		return st
	}
	var resets []int
	defer func() {
		ch.mu.Unlock()
		for _, k := range resets { // the key's tuner restarts from the pattern in force
			ch.jobs <- job{reset: k}
		}
	}()
	if ch.accepted != int(x) || ch.refusals == nil {
		all := make([]bool, nvotes)
		if nvotes > 0 {
			for i, v := range unsafe.Slice((*int64)(unsafe.Pointer(votes)), int(nvotes)) {
				all[i] = v != 0
			}
		}
		refused, resync, err := ch.p.Accept(int(x), all)
		if err != nil {
			return fail(C.REACT_E_STATE, "%s: %v", who, err)
		}
		type refusal struct {
			Key     int    `json:"key"`
			Version int    `json:"version"`
			Why     string `json:"why"`
		}
		rs := make([]refusal, len(refused))
		for i, r := range refused {
			rs[i] = refusal{r.Key, r.Version, r.Why}
			if ch.l != nil {
				resets = append(resets, r.Key)
			}
		}
		b, err := json.Marshal(rs)
		if err != nil {
			return fail(C.REACT_E_PANIC, "%s: %v", who, err)
		}
		ch.accepted, ch.refusals = int(x), b
		ch.acceptOut = [2]int64{int64(len(refused)), 0}
		if resync {
			ch.acceptOut[1] = 1
		}
	}
	r := unsafe.Slice((*int64)(unsafe.Pointer(result)), 2)
	r[0], r[1] = ch.acceptOut[0], ch.acceptOut[1]
	return out(ch.refusals, buf, cap, n)
}
