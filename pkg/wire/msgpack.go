package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/vmihailenco/msgpack/v5"
)

// column describes one flow field as it travels in msgpack.
type column struct {
	name     string
	dtype    string
	itemsize int
}

// The flow columns, in the order the encoder writes them.
const (
	colChunk = iota
	colStep
	colSrc
	colDst
	colKind
	colFraction
	numColumns
)

func columns() [numColumns]column {
	return [numColumns]column{
		{"chunk", "<i4", 4},
		{"step", "<i4", 4},
		{"src", "<i4", 4},
		{"dst", "<i4", 4},
		{"kind", "|u1", 1},
		{"fraction", "<f8", 8},
	}
}

// flowBytes is the size of one flow summed over all columns.
const flowBytes = 4*4 + 1 + 8

// maxDepth bounds the nesting of values the decoder skips, so that a
// hostile message cannot exhaust the stack.
const maxDepth = 64

// EncodeMsgpack returns the msgpack form of p (layout in the package doc).
func EncodeMsgpack(p *ten.Pattern) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("wire: msgpack: refusing to encode: %w", err)
	}
	n := len(p.Flows)
	w := &appendWriter{b: make([]byte, 0, 512+len(p.Algo)+n*flowBytes)}
	e := encoder{e: msgpack.NewEncoder(w)}
	e.do(e.e.EncodeMapLen(7))
	e.str("format", Format)
	e.str("op", p.Op.String())
	e.str("algo", p.Algo)
	e.int("ranks", int64(p.Ranks))
	e.int("root", int64(p.Root))
	e.int("nflows", int64(n))
	e.do(e.e.EncodeString("flows"))
	e.do(e.e.EncodeMapLen(numColumns))
	for c, col := range columns() {
		e.column(col.name, col.dtype, []int{n}, n*col.itemsize)
		if e.err != nil {
			break
		}
		w.b = appendColumn(w.b, p.Flows, c)
	}
	if e.err != nil {
		return nil, fmt.Errorf("wire: msgpack: %w", e.err)
	}
	return w.b, nil
}

func appendColumn(b []byte, flows []ten.Flow, c int) []byte {
	le := binary.LittleEndian
	switch c {
	case colChunk:
		for i := range flows {
			b = le.AppendUint32(b, uint32(flows[i].Chunk))
		}
	case colStep:
		for i := range flows {
			b = le.AppendUint32(b, uint32(flows[i].Step))
		}
	case colSrc:
		for i := range flows {
			b = le.AppendUint32(b, uint32(flows[i].Src))
		}
	case colDst:
		for i := range flows {
			b = le.AppendUint32(b, uint32(flows[i].Dst))
		}
	case colKind:
		for i := range flows {
			b = append(b, byte(flows[i].Kind))
		}
	case colFraction:
		for i := range flows {
			b = le.AppendUint64(b, math.Float64bits(flows[i].Fraction))
		}
	}
	return b
}

// appendWriter lets the msgpack encoder write headers into the same slice
// the columns are appended to, so column data is copied once.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

// encoder keeps the first error so the layout reads as a straight list.
type encoder struct {
	e   *msgpack.Encoder
	err error
}

func (e *encoder) do(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) str(key, v string) {
	e.do(e.e.EncodeString(key))
	e.do(e.e.EncodeString(v))
}

func (e *encoder) int(key string, v int64) {
	e.do(e.e.EncodeString(key))
	e.do(e.e.EncodeInt(v))
}

// column writes the header of a column up to the length of its bin data:
// name, then {"dtype": dtype, "shape": shape, "data": bin of nbytes}. The
// caller appends the nbytes of data itself.
func (e *encoder) column(name, dtype string, shape []int, nbytes int) {
	e.do(e.e.EncodeString(name))
	e.do(e.e.EncodeMapLen(3))
	e.str("dtype", dtype)
	e.do(e.e.EncodeString("shape"))
	e.do(e.e.EncodeArrayLen(len(shape)))
	for _, s := range shape {
		e.do(e.e.EncodeInt(int64(s)))
	}
	e.do(e.e.EncodeString("data"))
	e.do(e.e.EncodeBytesLen(nbytes))
}
