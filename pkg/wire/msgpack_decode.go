package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// DecodeMsgpack reads the msgpack form of a pattern and validates it. It
// never panics; column data is read in place, not copied twice.
func DecodeMsgpack(data []byte) (*ten.Pattern, error) {
	p, err := decodeMsgpack(data)
	if err != nil {
		return nil, fmt.Errorf("wire: msgpack: %w", err)
	}
	return p, nil
}

// Header keys, as bits of a seen-set.
const (
	keyFormat = 1 << iota
	keyOp
	keyAlgo
	keyRanks
	keyRoot
	keyNflows
	keyFlows
)

func decodeMsgpack(data []byte) (*ten.Pattern, error) {
	r := bytes.NewReader(data)
	d := reader{d: msgpack.NewDecoder(r), r: r, data: data}
	n, err := d.mapLen("pattern")
	if err != nil {
		return nil, err
	}
	p := &ten.Pattern{}
	var nflows int64
	var cols [numColumns]columnValue
	seen := 0
	names := [...]string{"format", "op", "algo", "ranks", "root", "nflows", "flows"}
	for range n {
		key, err := d.str("pattern key")
		if err != nil {
			return nil, err
		}
		bit := 0
		for i, name := range names {
			if key == name {
				bit = 1 << i
			}
		}
		if bit == 0 {
			if err := d.skip(key, 0); err != nil {
				return nil, err
			}
			continue
		}
		if seen&bit != 0 {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen |= bit
		switch bit {
		case keyFormat:
			s, err := d.str(key)
			if err != nil {
				return nil, err
			}
			if s != Format {
				return nil, fmt.Errorf("format: %q is not %q", s, Format)
			}
		case keyOp:
			s, err := d.str(key)
			if err != nil {
				return nil, err
			}
			if p.Op, err = ten.ParseOp(s); err != nil {
				return nil, fmt.Errorf("op: %w", err)
			}
		case keyAlgo:
			if p.Algo, err = d.str(key); err != nil {
				return nil, err
			}
		case keyRanks, keyRoot:
			v, err := d.int(key, math.MinInt32, math.MaxInt32)
			if err != nil {
				return nil, err
			}
			if bit == keyRanks {
				p.Ranks = int(v)
			} else {
				p.Root = int(v)
			}
		case keyNflows:
			if nflows, err = d.int(key, 0, math.MaxInt32); err != nil {
				return nil, err
			}
		case keyFlows:
			if err := d.columns(&cols); err != nil {
				return nil, err
			}
		}
	}
	if r.Len() > 0 {
		return nil, fmt.Errorf("trailing garbage: %d bytes after the pattern map", r.Len())
	}
	for i, name := range names {
		if seen&(1<<i) == 0 {
			return nil, fmt.Errorf("key %q missing", name)
		}
	}
	// Every column must hold nflows values before anything is sized by
	// nflows: a header may claim 2^31-1 flows in a few bytes.
	var colData [numColumns][]byte
	for c, col := range columns() {
		if colData[c], err = cols[c].check(col.dtype, col.itemsize, []int64{nflows}, "nflows"); err != nil {
			return nil, fmt.Errorf("flows: column %q: %w", col.name, err)
		}
	}
	p.Flows = make([]ten.Flow, nflows)
	for c := range columns() {
		readColumn(p.Flows, c, colData[c])
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func readColumn(flows []ten.Flow, c int, b []byte) {
	le := binary.LittleEndian
	switch c {
	case colChunk:
		for i := range flows {
			flows[i].Chunk = int32(le.Uint32(b[4*i:]))
		}
	case colStep:
		for i := range flows {
			flows[i].Step = int32(le.Uint32(b[4*i:]))
		}
	case colSrc:
		for i := range flows {
			flows[i].Src = int32(le.Uint32(b[4*i:]))
		}
	case colDst:
		for i := range flows {
			flows[i].Dst = int32(le.Uint32(b[4*i:]))
		}
	case colKind:
		for i := range flows {
			flows[i].Kind = ten.Kind(b[i])
		}
	case colFraction:
		for i := range flows {
			flows[i].Fraction = math.Float64frombits(le.Uint64(b[8*i:]))
		}
	}
}

// columnValue is a column as read, {"dtype": str, "shape": [int, ...],
// "data": bin}, before it is checked against the sizes the message gives
// elsewhere. Pattern flows and FCT batches read their columns with it.
type columnValue struct {
	present bool
	dtype   *string
	shape   []int64 // nil when the key was absent
	data    []byte  // nil when the key was absent
}

// check returns the column's data once its dtype is dtype and its shape is
// shape (which the message's from keys give), with itemsize bytes a value.
func (v *columnValue) check(dtype string, itemsize int, shape []int64, from string) ([]byte, error) {
	switch {
	case !v.present:
		return nil, errors.New("missing")
	case v.dtype == nil:
		return nil, errors.New("key \"dtype\" missing")
	case *v.dtype != dtype:
		return nil, fmt.Errorf("dtype %q, want %q", *v.dtype, dtype)
	case v.shape == nil:
		return nil, errors.New("key \"shape\" missing")
	case len(v.shape) != len(shape):
		return nil, fmt.Errorf("shape %v has %d dimensions, want %d", v.shape, len(v.shape), len(shape))
	case v.data == nil:
		return nil, errors.New("key \"data\" missing")
	}
	want := int64(itemsize)
	for i, s := range shape {
		if v.shape[i] != s {
			return nil, fmt.Errorf("shape %v, want %v (from %s)", v.shape, shape, from)
		}
		if s > 0 && want > math.MaxInt64/s {
			return nil, fmt.Errorf("shape %v: more bytes than a message can hold", shape)
		}
		want *= s
	}
	if int64(len(v.data)) != want {
		return nil, fmt.Errorf("data has %d bytes, want %d (shape %v x %d bytes)", len(v.data), want, shape, itemsize)
	}
	return v.data, nil
}

// reader wraps the msgpack decoder with checks that name what is read and
// with in-place access to bin data.
type reader struct {
	d    *msgpack.Decoder
	r    *bytes.Reader
	data []byte
}

// wrap names the value being read and turns a short read into words.
func wrap(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: truncated input", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (d *reader) peek(what string) (byte, error) {
	c, err := d.d.PeekCode()
	if err != nil {
		return 0, wrap(what, err)
	}
	return c, nil
}

func isMap(c byte) bool { return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32 }
func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}
func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

// typeName names the msgpack type a code starts, for error messages.
func typeName(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case c == msgpcode.False || c == msgpcode.True:
		return "bool"
	case isInt(c):
		return "int"
	case c == msgpcode.Float || c == msgpcode.Double:
		return "float"
	case msgpcode.IsString(c):
		return "str"
	case msgpcode.IsBin(c):
		return "bin"
	case isArray(c):
		return "array"
	case isMap(c):
		return "map"
	case msgpcode.IsExt(c):
		return "ext"
	}
	return fmt.Sprintf("invalid code 0x%02x", c)
}

func (d *reader) mapLen(what string) (int, error) {
	c, err := d.peek(what)
	if err != nil {
		return 0, err
	}
	if !isMap(c) {
		return 0, fmt.Errorf("%s: want a map, got %s", what, typeName(c))
	}
	n, err := d.d.DecodeMapLen()
	if err != nil {
		return 0, wrap(what, err)
	}
	return n, nil
}

func (d *reader) str(what string) (string, error) {
	c, err := d.peek(what)
	if err != nil {
		return "", err
	}
	if !msgpcode.IsString(c) {
		return "", fmt.Errorf("%s: want a str, got %s", what, typeName(c))
	}
	b, err := d.bin(what) // in place: a claimed length past the input fails first
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *reader) bool(what string) (bool, error) {
	c, err := d.peek(what)
	if err != nil {
		return false, err
	}
	if c != msgpcode.False && c != msgpcode.True {
		return false, fmt.Errorf("%s: want a bool, got %s", what, typeName(c))
	}
	v, err := d.d.DecodeBool()
	if err != nil {
		return false, wrap(what, err)
	}
	return v, nil
}

func (d *reader) int(what string, lo, hi int64) (int64, error) {
	c, err := d.peek(what)
	if err != nil {
		return 0, err
	}
	if !isInt(c) {
		return 0, fmt.Errorf("%s: want an int, got %s", what, typeName(c))
	}
	var v int64
	if c == msgpcode.Uint64 {
		u, err := d.d.DecodeUint64()
		if err != nil {
			return 0, wrap(what, err)
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("%s: %d out of range [%d, %d]", what, u, lo, hi)
		}
		v = int64(u)
	} else if v, err = d.d.DecodeInt64(); err != nil {
		return 0, wrap(what, err)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s: %d out of range [%d, %d]", what, v, lo, hi)
	}
	return v, nil
}

// bin returns bin (or str) data as a subslice of the input, without a copy.
func (d *reader) bin(what string) ([]byte, error) {
	c, err := d.peek(what)
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsBin(c) && !msgpcode.IsString(c) {
		return nil, fmt.Errorf("%s: want a bin, got %s", what, typeName(c))
	}
	n, err := d.d.DecodeBytesLen()
	if err != nil {
		return nil, wrap(what, err)
	}
	if n < 0 || n > d.r.Len() {
		return nil, fmt.Errorf("%s: truncated input (%d bytes announced, %d left)", what, n, d.r.Len())
	}
	pos := len(d.data) - d.r.Len()
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, wrap(what, err)
	}
	return d.data[pos : pos+n : pos+n], nil
}

// skip steps over a value of a key this version does not know, allocating
// nothing: str, bin and ext are stepped over in place once their claimed
// length is known to lie within the input.
func (d *reader) skip(what string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: nested deeper than %d", what, maxDepth)
	}
	c, err := d.peek(what)
	if err != nil {
		return err
	}
	var n int
	switch {
	case isMap(c):
		if n, err = d.d.DecodeMapLen(); err != nil {
			return wrap(what, err)
		}
		n *= 2
	case isArray(c):
		if n, err = d.d.DecodeArrayLen(); err != nil {
			return wrap(what, err)
		}
	case msgpcode.IsBin(c) || msgpcode.IsString(c):
		_, err := d.bin(what)
		return err
	case msgpcode.IsExt(c):
		// the library would allocate the claimed length to skip it
		if _, n, err = d.d.DecodeExtHeader(); err != nil {
			return wrap(what, err)
		}
		if n < 0 || n > d.r.Len() {
			return fmt.Errorf("%s: truncated input (%d bytes announced, %d left)", what, n, d.r.Len())
		}
		_, err := d.r.Seek(int64(n), io.SeekCurrent)
		return err
	default:
		if err := d.d.Skip(); err != nil {
			return wrap(what, err)
		}
		return nil
	}
	for range n {
		if err := d.skip(what, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (d *reader) columns(cols *[numColumns]columnValue) error {
	n, err := d.mapLen("flows")
	if err != nil {
		return err
	}
	specs := columns()
	for range n {
		name, err := d.str("flows: column name")
		if err != nil {
			return err
		}
		c := -1
		for i, s := range specs {
			if s.name == name {
				c = i
			}
		}
		if c < 0 {
			if err := d.skip(fmt.Sprintf("flows: column %q", name), 0); err != nil {
				return err
			}
			continue
		}
		if cols[c].present {
			return fmt.Errorf("flows: column %q appears twice", name)
		}
		if err := d.column(fmt.Sprintf("flows: column %q", name), &cols[c], 1); err != nil {
			return err
		}
	}
	return nil
}

// column reads a column map into v: dtype, shape (an array of 1 to
// maxDims ints in [0, MaxInt32]) and data (bin, read in place); unknown
// keys are skipped, a key twice is an error.
func (d *reader) column(what string, v *columnValue, maxDims int) error {
	n, err := d.mapLen(what)
	if err != nil {
		return err
	}
	v.present = true
	for range n {
		key, err := d.str(what + ": key")
		if err != nil {
			return err
		}
		where := what + ": " + key
		switch key {
		case "dtype":
			if v.dtype != nil {
				return fmt.Errorf("%s appears twice", where)
			}
			s, err := d.str(where)
			if err != nil {
				return err
			}
			v.dtype = &s
		case "shape":
			if v.shape != nil {
				return fmt.Errorf("%s appears twice", where)
			}
			c, err := d.peek(where)
			if err != nil {
				return err
			}
			if !isArray(c) {
				return fmt.Errorf("%s: want an array, got %s", where, typeName(c))
			}
			dims, err := d.d.DecodeArrayLen()
			if err != nil {
				return wrap(where, err)
			}
			if dims < 1 || dims > maxDims {
				want := "1"
				if maxDims > 1 {
					want = fmt.Sprintf("1 to %d", maxDims)
				}
				return fmt.Errorf("%s: %d dimensions, want %s", where, dims, want)
			}
			v.shape = make([]int64, dims)
			for i := range v.shape {
				if v.shape[i], err = d.int(where, 0, math.MaxInt32); err != nil {
					return err
				}
			}
		case "data":
			if v.data != nil {
				return fmt.Errorf("%s appears twice", where)
			}
			if v.data, err = d.bin(where); err != nil {
				return err
			}
		default:
			if err := d.skip(where, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
