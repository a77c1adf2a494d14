package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/vmihailenco/msgpack/v5"
)

// LayoutFormat names the msgpack form of a semantics.Layout.
const LayoutFormat = "react.layout/v1"

// EncodeLayout returns the msgpack form of a pattern's block layout, the
// part of the exactly-once analysis an executor needs to place data:
//
//	"format"  str  "react.layout/v1"
//	"start"   col  <i4 [F+1]  blocks[start[f]:start[f+1]] are flow f's blocks (allgather)
//	"blocks"  col  <i4 [B]    block (origin rank) indices, ascending per flow
//	"owner"   col  <i4 [C]    rank at which chunk c completes (reducescatter), else -1
//	"pred_start" col <i4 [F+1] preds[pred_start[f]:pred_start[f+1]] are the flows f waits for
//	"preds"   col  <i4 [E]    flows of f's chunk into f's source at earlier steps (critpath.DAG)
//	"exchange_row" int        ExchangeRowLen(F, ranks): the pattern's row in an exchange
//
// The preds are when data moves: a flow starts once the last of them has
// arrived at its source and been applied there. The executor, the
// simulator and the link model's replay follow this one rule.
//
// Columns have the pattern's shape: {"dtype", "shape", "data"}.
func EncodeLayout(l *semantics.Layout, d *critpath.DAG, ranks int) ([]byte, error) {
	predStart := make([]int32, d.Len()+1)
	var preds []int32
	for f := range d.Len() {
		preds = append(preds, d.Preds(f)...)
		predStart[f+1] = int32(len(preds))
	}
	w := &appendWriter{b: make([]byte, 0, 256+4*(len(l.Start)+len(l.Blocks)+len(l.Owner)+len(predStart)+len(preds)))}
	e := encoder{e: msgpack.NewEncoder(w)}
	e.do(e.e.EncodeMapLen(7))
	e.str("format", LayoutFormat)
	e.do(e.e.EncodeString("exchange_row"))
	e.do(e.e.EncodeInt(int64(ExchangeRowLen(d.Len(), ranks))))
	for _, c := range []struct {
		name string
		v    []int32
	}{{"start", l.Start}, {"blocks", l.Blocks}, {"owner", l.Owner}, {"pred_start", predStart}, {"preds", preds}} {
		e.do(e.e.EncodeString(c.name))
		e.do(e.e.EncodeMapLen(3))
		e.str("dtype", "<i4")
		e.do(e.e.EncodeString("shape"))
		e.do(e.e.EncodeArrayLen(1))
		e.do(e.e.EncodeInt(int64(len(c.v))))
		e.do(e.e.EncodeString("data"))
		e.do(e.e.EncodeBytesLen(4 * len(c.v)))
		if e.err != nil {
			break
		}
		for _, x := range c.v {
			w.b = binary.LittleEndian.AppendUint32(w.b, uint32(x))
		}
	}
	if e.err != nil {
		return nil, fmt.Errorf("wire: layout: %w", e.err)
	}
	return w.b, nil
}
