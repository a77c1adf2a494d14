// Command libreact is the C ABI of REACT, built with
// go build -buildmode=c-shared (make lib) into libreact.so. The contract is
// capi/react.h; this package holds only the //export layer. The public
// react_* symbols are defined in shim.c, which refuses calls from a forked
// child before they reach Go and forwards the rest to the react_go_*
// functions here. Each of those recovers panics into REACT_E_PANIC, copies
// results into the caller's buffers and never lets a Go pointer out.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../capi
#include <stdlib.h>
#include "react.h"

// Stores the calling thread's error message (shim.c).
void react__set_error(const char* msg, size_t n);
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/react-torch/react-torch/internal/driver"
	"github.com/react-torch/react-torch/internal/logging"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/plan"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
	"go.uber.org/zap"
)

func main() {}

// The header's size limits are Go's: a mismatch does not compile.
const (
	_ = uint(C.REACT_MAX_RANKS-ten.MaxRanks) + uint(ten.MaxRanks-C.REACT_MAX_RANKS)
	_ = uint(C.REACT_MAX_STEPS-ten.MaxSteps) + uint(ten.MaxSteps-C.REACT_MAX_STEPS)
)

// logger is what tuners derive theirs from; react_init replaces it.
var logger atomic.Pointer[zap.Logger]

// fail records msg as the calling thread's last error and returns code.
func fail(code C.int, format string, a ...any) C.int {
	msg := fmt.Sprintf(format, a...)
	if len(msg) > C.REACT_ERROR_MAX-1 {
		msg = msg[:C.REACT_ERROR_MAX-1]
		for len(msg) > 0 && !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" {
		msg = "unknown error"
	}
	C.react__set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	return code
}

// guard turns a panic into REACT_E_PANIC; every export defers it.
func guard(st *C.int) {
	if r := recover(); r != nil {
		*st = fail(C.REACT_E_PANIC, "internal error (please report): %v", r)
	}
}

// in views caller memory without copying; nothing here keeps it past the call.
func in(p *C.uint8_t, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

// out writes data by the buffer protocol.
func out(data []byte, buf *C.uint8_t, cap C.size_t, n *C.size_t) C.int {
	*n = C.size_t(len(data))
	if buf == nil || int(cap) < len(data) {
		return fail(C.REACT_E_SHORT, "buffer of %d bytes, %d needed", int(cap), len(data))
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(data)), data)
	return C.REACT_OK
}

//export react_go_abi_version
func react_go_abi_version() (st C.int) {
	defer guard(&st)
	return C.REACT_ABI_VERSION
}

//export react_go_init
func react_go_init(level C.int, path *C.char, procs C.int) (st C.int) {
	defer guard(&st)
	if procs < 0 {
		return fail(C.REACT_E_ARG, "react_init: gomaxprocs %d, want > 0, or 0 to leave it", int(procs))
	}
	p := ""
	if path != nil {
		p = C.GoString(path)
	}
	log, _, err := logging.New(int(level), p)
	if err != nil {
		return fail(C.REACT_E_ARG, "react_init: %v", err)
	}
	if procs > 0 {
		runtime.GOMAXPROCS(int(procs))
	}
	logger.Store(log)
	log.Info("libreact initialised", zap.Int("abi", C.REACT_ABI_VERSION), zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)), zap.String("go", runtime.Version()))
	return C.REACT_OK
}

//export react_go_pattern_generate
func react_go_pattern_generate(op, algo *C.char, ranks, root C.int, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	if op == nil || algo == nil || n == nil {
		return fail(C.REACT_E_ARG, "react_pattern_generate: op, algo and len must not be NULL")
	}
	o, err := ten.ParseOp(C.GoString(op))
	if err != nil {
		return fail(C.REACT_E_ARG, "react_pattern_generate: %v", err)
	}
	p, err := pattern.Generate(o, C.GoString(algo), int(ranks), int(root))
	if errors.Is(err, ten.ErrLimit) {
		return fail(C.REACT_E_LIMIT, "react_pattern_generate: %v", err)
	}
	if err != nil {
		return fail(C.REACT_E_ARG, "react_pattern_generate: %v", err)
	}
	enc, err := wire.EncodeMsgpack(p)
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_pattern_generate: generated pattern does not encode: %v", err)
	}
	return out(enc, buf, cap, n)
}

// decodePattern decodes and checks a pattern, mapping failures to codes.
func decodePattern(who string, buf *C.uint8_t, n C.size_t) (*ten.Pattern, C.int) {
	if buf == nil {
		return nil, fail(C.REACT_E_ARG, "%s: pattern buffer is NULL", who)
	}
	p, err := wire.DecodeMsgpack(in(buf, n))
	if errors.Is(err, ten.ErrLimit) {
		return nil, fail(C.REACT_E_LIMIT, "%s: %v", who, err)
	}
	if err != nil {
		return nil, fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	if err := semantics.Check(p); err != nil {
		var v *semantics.Violation
		if errors.As(err, &v) {
			return nil, fail(C.REACT_E_SEMANTICS, "%s: %v", who, err)
		}
		return nil, fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	return p, C.REACT_OK
}

//export react_go_pattern_layout
func react_go_pattern_layout(pat *C.uint8_t, plen C.size_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	if n == nil {
		return fail(C.REACT_E_ARG, "react_pattern_layout: len must not be NULL")
	}
	p, st := decodePattern("react_pattern_layout", pat, plen)
	if st != C.REACT_OK {
		return st
	}
	ly, err := semantics.NewLayout(p)
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_pattern_layout: checked pattern has no layout: %v", err)
	}
	enc, err := wire.EncodeLayout(ly, critpath.New(p), p.Ranks)
	if err != nil {
		return fail(C.REACT_E_PANIC, "react_pattern_layout: %v", err)
	}
	return out(enc, buf, cap, n)
}

//export react_go_pattern_plan
func react_go_pattern_plan(pat *C.uint8_t, plen C.size_t, rank C.int, numel C.int64_t, itemsize C.int, segBytes C.int64_t,
	buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_pattern_plan"
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	p, st := decodePattern(who, pat, plen)
	if st != C.REACT_OK {
		return st
	}
	if int(rank) < 0 || int(rank) >= p.Ranks || numel < 0 || itemsize <= 0 || segBytes < 0 {
		return fail(C.REACT_E_ARG, "%s: rank %d (of %d), numel %d, itemsize %d, segment_bytes %d: want 0 <= rank < ranks, numel >= 0, itemsize > 0, segment_bytes >= 0",
			who, int(rank), p.Ranks, int64(numel), int(itemsize), int64(segBytes))
	}
	ly, err := semantics.NewLayout(p)
	if err != nil {
		return fail(C.REACT_E_PANIC, "%s: checked pattern has no layout: %v", who, err)
	}
	pl, err := plan.New(p, ly, critpath.New(p), int(rank), int64(numel), int(itemsize), int(segBytes))
	if err != nil {
		return fail(C.REACT_E_PANIC, "%s: %v", who, err)
	}
	enc, err := wire.EncodePlan(pl)
	if err != nil {
		return fail(C.REACT_E_PANIC, "%s: %v", who, err)
	}
	return out(enc, buf, cap, n)
}

//export react_go_tuner_create
func react_go_tuner_create(buf *C.uint8_t, n C.size_t, msgBytes C.double, config *C.char, h *C.uint64_t) (st C.int) {
	defer guard(&st)
	const who = "react_tuner_create"
	if h == nil {
		return fail(C.REACT_E_ARG, "%s: handle pointer is NULL", who)
	}
	p, st := decodePattern(who, buf, n)
	if st != C.REACT_OK {
		return st
	}
	if b := float64(msgBytes); !(b > 0) || math.IsInf(b, 0) {
		return fail(C.REACT_E_ARG, "%s: message_bytes %v, want > 0 and finite", who, b)
	}
	cfg, label := tuner.DefaultConfig(), ""
	if config != nil {
		c, err := parseConfig(C.GoString(config))
		if err != nil {
			return fail(C.REACT_E_INVALID, "%s: %v", who, err)
		}
		cfg, label = c.tuner, c.label
	}
	if err := cfg.Validate(); err != nil {
		return fail(C.REACT_E_ARG, "%s: %v", who, err)
	}
	d, err := driver.New(cfg, p, float64(msgBytes))
	if err != nil {
		return fail(C.REACT_E_ARG, "%s: %v", who, err)
	}
	handle := cgo.NewHandle(d)
	log := logger.Load()
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.Uint64("handle", uint64(handle)), zap.String("label", label))
	log.Info("tuner created", zap.Int("version", 0), zap.String("op", p.Op.String()), zap.String("algo", p.Algo),
		zap.Int("ranks", p.Ranks), zap.Int("flows", len(p.Flows)), zap.Float64("message_bytes", float64(msgBytes)), zap.Any("config", cfg))
	d.SetLogger(log, label)
	*h = C.uint64_t(handle)
	return C.REACT_OK
}

// lookup resolves a handle; cgo.Handle panics on a bad one, which is
// turned into REACT_E_HANDLE here.
func lookup(who string, h C.uint64_t) (d *driver.Driver, st C.int) {
	func() {
		defer func() {
			if recover() != nil {
				d = nil
			}
		}()
		d, _ = cgo.Handle(h).Value().(*driver.Driver)
	}()
	if d == nil || d.Closed() {
		return nil, fail(C.REACT_E_HANDLE, "%s: unknown or closed tuner handle %d", who, uint64(h))
	}
	return d, C.REACT_OK
}

// driverStatus maps a driver error to a status.
func driverStatus(who string, err error) C.int {
	if err == nil {
		return C.REACT_OK
	}
	var e *driver.Error
	if errors.As(err, &e) {
		switch e.Kind {
		case driver.Invalid:
			return fail(C.REACT_E_INVALID, "%s: %v", who, err)
		case driver.State:
			return fail(C.REACT_E_STATE, "%s: %v", who, err)
		case driver.Closed:
			return fail(C.REACT_E_HANDLE, "%s: %v", who, err)
		}
	}
	return fail(C.REACT_E_PANIC, "%s: %v", who, err)
}

//export react_go_tuner_close
func react_go_tuner_close(h C.uint64_t) (st C.int) {
	defer guard(&st)
	const who = "react_tuner_close"
	d, st := lookup(who, h)
	if st != C.REACT_OK {
		return st
	}
	if err := d.Close(); err != nil {
		return driverStatus(who, err) // a concurrent close won
	}
	cgo.Handle(h).Delete()
	return C.REACT_OK
}

//export react_go_tuner_submit
func react_go_tuner_submit(h C.uint64_t, buf *C.uint8_t, n C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_tuner_submit"
	d, st := lookup(who, h)
	if st != C.REACT_OK {
		return st
	}
	if buf == nil {
		return fail(C.REACT_E_ARG, "%s: batch buffer is NULL", who)
	}
	b, err := wire.DecodeFCTBatch(in(buf, n))
	if err != nil {
		return fail(C.REACT_E_INVALID, "%s: %v", who, err)
	}
	return driverStatus(who, d.Submit(b))
}

//export react_go_tuner_decision
func react_go_tuner_decision(h C.uint64_t, version, effective *C.int64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_tuner_decision"
	d, st := lookup(who, h)
	if st != C.REACT_OK {
		return st
	}
	if version == nil || effective == nil || n == nil {
		return fail(C.REACT_E_ARG, "%s: version, effective_epoch and len must not be NULL", who)
	}
	room := int(cap)
	if buf == nil {
		room = 0
	}
	dec, ok, fits := d.Decision(room)
	if !ok {
		*n = 0
		return C.REACT_NONE
	}
	*version, *effective = C.int64_t(dec.Version), C.int64_t(dec.Effective)
	if !fits {
		*n = C.size_t(len(dec.Pattern))
		return fail(C.REACT_E_SHORT, "%s: buffer of %d bytes, pattern version %d needs %d", who, room, dec.Version, len(dec.Pattern))
	}
	return out(dec.Pattern, buf, cap, n)
}

//export react_go_tuner_report
func react_go_tuner_report(h C.uint64_t, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_tuner_report"
	d, st := lookup(who, h)
	if st != C.REACT_OK {
		return st
	}
	if n == nil {
		return fail(C.REACT_E_ARG, "%s: len must not be NULL", who)
	}
	enc, err := d.Report()
	if err != nil {
		return driverStatus(who, err)
	}
	return out(enc, buf, cap, n)
}
