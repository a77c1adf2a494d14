package main

/*
#include "react.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"unsafe"

	"github.com/react-torch/react-torch/internal/agree"
)

// The header's call constants are Go's: a mismatch does not compile.
const (
	_ = uint(C.REACT_CALL_FIELDS-agree.Fields) + uint(agree.Fields-C.REACT_CALL_FIELDS)
	_ = uint(C.REACT_CALL_SALT_BITS-agree.SaltBits) + uint(agree.SaltBits-C.REACT_CALL_SALT_BITS)
)

//export react_go_call_sign
func react_go_call_sign(seq C.int64_t, op *C.char, dtype *C.char, numel C.int64_t, root C.int64_t, reduce *C.char,
	epoch C.int64_t, version C.int64_t, sig *C.int64_t, salt *C.uint32_t, digest *C.int64_t) (st C.int) {
	defer guard(&st)
	const who = "react_call_sign"
	if op == nil || dtype == nil || reduce == nil || sig == nil || salt == nil || digest == nil {
		return fail(C.REACT_E_ARG, "%s: op, dtype, reduce, sig, salt and digest must not be NULL", who)
	}
	s, err := agree.Sign(int64(seq), C.GoString(op), C.GoString(dtype), int64(numel), int64(root), C.GoString(reduce),
		int64(epoch), int64(version))
	if err != nil {
		return fail(C.REACT_E_ARG, "%s: %v", who, err)
	}
	dst := unsafe.Slice((*int64)(unsafe.Pointer(sig)), agree.Fields)
	copy(dst, s[:])
	sa, d := s.Hash()
	*salt, *digest = C.uint32_t(sa), C.int64_t(d)
	return C.REACT_OK
}

//export react_go_call_sentence
func react_go_call_sentence(sigs *C.int64_t, ranks *C.int, n C.int, size C.int, buf *C.uint8_t, cap C.size_t, len *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_call_sentence"
	if n < 1 || size < 1 || sigs == nil || ranks == nil || len == nil {
		return fail(C.REACT_E_ARG, "%s: n %d and size %d must be >= 1, sigs, ranks and len not NULL", who, n, size)
	}
	all := unsafe.Slice((*int64)(unsafe.Pointer(sigs)), int(n)*agree.Fields)
	rs := unsafe.Slice((*C.int)(unsafe.Pointer(ranks)), int(n))
	by := make(map[int]agree.Sig, int(n))
	for i, r := range rs {
		if r < 0 || r >= size {
			return fail(C.REACT_E_ARG, "%s: rank %d of a group of %d", who, r, size)
		}
		if _, dup := by[int(r)]; dup {
			return fail(C.REACT_E_ARG, "%s: rank %d given twice", who, r)
		}
		var s agree.Sig
		copy(s[:], all[i*agree.Fields:])
		by[int(r)] = s
	}
	return out([]byte(agree.Sentence(by, int(size))), buf, cap, len)
}

//export react_go_settings_agree
func react_go_settings_agree(every *C.char, size C.int, buf *C.uint8_t, cap C.size_t, n *C.size_t) (st C.int) {
	defer guard(&st)
	const who = "react_settings_agree"
	if every == nil || n == nil {
		return fail(C.REACT_E_ARG, "%s: every and len must not be NULL", who)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(C.GoString(every))))
	var sets []map[string]json.RawMessage
	if err := dec.Decode(&sets); err != nil || slices.ContainsFunc(sets, func(m map[string]json.RawMessage) bool { return m == nil }) {
		return fail(C.REACT_E_INVALID, "%s: every is not a JSON array of objects", who)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(C.REACT_E_INVALID, "%s: data after the array", who)
	}
	if len(sets) != int(size) {
		return fail(C.REACT_E_ARG, "%s: %d ranks' settings for a group of %d", who, len(sets), size)
	}
	return out([]byte(agree.Settings(sets, int(size))), buf, cap, n)
}
