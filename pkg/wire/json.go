package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/react-torch/react-torch/pkg/ten"
)

// jsonFlushSize is how much encoded text EncodeJSON gathers per Write.
const jsonFlushSize = 64 << 10

// EncodeJSON writes p in the JSON pattern contract, one flow per line. The
// output depends only on p, so it can be compared byte for byte.
func EncodeJSON(w io.Writer, p *ten.Pattern) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("wire: json: refusing to encode: %w", err)
	}
	algo, err := json.Marshal(p.Algo)
	if err != nil {
		return fmt.Errorf("wire: json: algo: %w", err)
	}
	b := make([]byte, 0, jsonFlushSize+256)
	b = append(b, "{\n  \"format\": \""+Format+"\",\n  \"op\": \""...)
	b = append(b, p.Op.String()...)
	b = append(b, "\",\n  \"algo\": "...)
	b = append(b, algo...)
	b = append(b, ",\n  \"ranks\": "...)
	b = strconv.AppendInt(b, int64(p.Ranks), 10)
	b = append(b, ",\n  \"root\": "...)
	b = strconv.AppendInt(b, int64(p.Root), 10)
	b = append(b, ",\n  \"flows\": ["...)
	for i := range p.Flows {
		f := &p.Flows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"chunk\": "...)
		b = strconv.AppendInt(b, int64(f.Chunk), 10)
		b = append(b, ", \"step\": "...)
		b = strconv.AppendInt(b, int64(f.Step), 10)
		b = append(b, ", \"src\": "...)
		b = strconv.AppendInt(b, int64(f.Src), 10)
		b = append(b, ", \"dst\": "...)
		b = strconv.AppendInt(b, int64(f.Dst), 10)
		b = append(b, ", \"kind\": \""...)
		b = append(b, f.Kind.String()...)
		b = append(b, "\", \"fraction\": "...)
		b = strconv.AppendFloat(b, f.Fraction, 'g', -1, 64)
		b = append(b, '}')
		if len(b) >= jsonFlushSize {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, "\n  ]\n}\n"...)
	_, err = w.Write(b)
	return err
}

// DecodeJSON reads a pattern in the JSON contract and validates it. Errors
// name the field (and flow index) at fault; syntax errors give line, column
// and byte offset.
func DecodeJSON(data []byte) (*ten.Pattern, error) {
	var doc jsonPattern
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, jsonError(data, err)
	}
	p, err := doc.pattern(data)
	if err != nil {
		return nil, fmt.Errorf("wire: json: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("wire: json: %w", err)
	}
	return p, nil
}

func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("wire: json: empty input")
	}
	if errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input" {
		return fmt.Errorf("wire: json: invalid JSON: input ends early, after %d bytes", len(data))
	}
	if errors.As(err, &syn) {
		// Offset counts the bytes read, the offending one included.
		off := max(syn.Offset-1, 0)
		line, col := lineCol(data, off)
		return fmt.Errorf("wire: json: invalid JSON at line %d, column %d (byte %d): %v", line, col, off, err)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		field := typ.Field
		if field == "" {
			field = "top level"
		}
		line, col := lineCol(data, max(typ.Offset-1, 0))
		return fmt.Errorf("wire: json: %s: got a JSON %s, want %s (near line %d, column %d)",
			field, typ.Value, jsonKind(typ.Type.Kind().String()), line, col)
	}
	return fmt.Errorf("wire: json: %w", err)
}

// jsonKind names a Go target kind the way a JSON author thinks of it.
func jsonKind(k string) string {
	switch k {
	case "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return k
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	pre := data[:off]
	line = bytes.Count(pre, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
	return line, col
}

// jsonPattern mirrors the contract with compact field types that record
// what they saw instead of failing, so that an error can name the flow and
// the field; the offending text is looked up again only on that error path.
type jsonPattern struct {
	Format jsonString `json:"format"`
	Op     jsonString `json:"op"`
	Algo   jsonString `json:"algo"`
	Ranks  jsonInt    `json:"ranks"`
	Root   jsonInt    `json:"root"`
	Flows  []jsonFlow `json:"flows"`
}

type jsonFlow struct {
	Chunk    jsonInt   `json:"chunk"`
	Step     jsonInt   `json:"step"`
	Src      jsonInt   `json:"src"`
	Dst      jsonInt   `json:"dst"`
	Kind     jsonKindV `json:"kind"`
	Fraction jsonFloat `json:"fraction"`
}

// What a field type saw.
const (
	stMissing uint8 = iota
	stOK
	stBad   // wrong JSON type, or not an integer literal
	stRange // a number out of range, or an unknown kind name
)

func (d *jsonPattern) pattern(data []byte) (*ten.Pattern, error) {
	header := func(key string, st uint8, want string) error {
		return fieldError(key, st, want, func() []byte { return rawHeader(data, key) })
	}
	if err := header("format", d.Format.st, "a string"); err != nil {
		return nil, err
	}
	if d.Format.s != Format {
		return nil, fmt.Errorf("format: %q is not %q", d.Format.s, Format)
	}
	if err := header("op", d.Op.st, "a string"); err != nil {
		return nil, err
	}
	op, err := ten.ParseOp(d.Op.s)
	if err != nil {
		return nil, fmt.Errorf("op: %w", err)
	}
	if err := header("algo", d.Algo.st, "a string"); err != nil {
		return nil, err
	}
	if err := header("ranks", d.Ranks.st, "an integer"); err != nil {
		return nil, err
	}
	if err := header("root", d.Root.st, "an integer"); err != nil {
		return nil, err
	}
	if d.Flows == nil {
		return nil, errors.New("flows: missing")
	}
	p := &ten.Pattern{Op: op, Algo: d.Algo.s, Ranks: int(d.Ranks.v), Root: int(d.Root.v), Flows: make([]ten.Flow, len(d.Flows))}
	for i := range d.Flows {
		j := &d.Flows[i]
		field := func(key string, st uint8, want string) error {
			if err := fieldError(key, st, want, func() []byte { return rawFlow(data, i, key) }); err != nil {
				return fmt.Errorf("flow %d: %w", i, err)
			}
			return nil
		}
		for _, err := range [...]error{
			field("chunk", j.Chunk.st, "an integer"),
			field("step", j.Step.st, "an integer"),
			field("src", j.Src.st, "an integer"),
			field("dst", j.Dst.st, "an integer"),
			field("kind", j.Kind.st, `"reduce" or "copy"`),
			field("fraction", j.Fraction.st, "a number"),
		} {
			if err != nil {
				return nil, err
			}
		}
		p.Flows[i] = ten.Flow{Chunk: j.Chunk.v, Step: j.Step.v, Src: j.Src.v, Dst: j.Dst.v, Kind: j.Kind.k, Fraction: j.Fraction.v}
	}
	return p, nil
}

// fieldError explains a field that is not stOK; raw fetches its text.
func fieldError(key string, st uint8, want string, raw func() []byte) error {
	switch st {
	case stOK:
		return nil
	case stMissing:
		return fmt.Errorf("%s: missing", key)
	case stBad:
		return fmt.Errorf("%s: want %s, got %s", key, want, describe(raw()))
	}
	b := raw()
	if key == "kind" {
		var s string
		if json.Unmarshal(b, &s) == nil {
			if _, err := ten.ParseKind(s); err != nil {
				return fmt.Errorf("kind: %w", err)
			}
		}
	}
	limit := "int32"
	if want == "a number" {
		limit = "float64"
	}
	return fmt.Errorf("%s: %s is out of %s range", key, b, limit)
}

// rawHeader and rawFlow find a value's text again, matching keys the way
// encoding/json does (case-insensitively). They run only to word an error.
func rawHeader(data []byte, key string) []byte {
	var doc map[string]json.RawMessage
	_ = json.Unmarshal(data, &doc)
	return lookup(doc, key)
}

func rawFlow(data []byte, i int, key string) []byte {
	var doc struct {
		Flows []map[string]json.RawMessage `json:"flows"`
	}
	_ = json.Unmarshal(data, &doc)
	if i >= len(doc.Flows) {
		return nil
	}
	return lookup(doc.Flows[i], key)
}

func lookup(m map[string]json.RawMessage, key string) []byte {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// describe names a raw JSON value for an error message, shortened.
func describe(b []byte) string {
	const limit = 24
	if len(b) == 0 {
		return "nothing"
	}
	kind := "number"
	switch b[0] {
	case '"':
		kind = "string"
	case '{':
		kind = "object"
	case '[':
		kind = "array"
	case 't', 'f':
		kind = "boolean"
	case 'n':
		return "null"
	}
	if len(b) > limit {
		return kind + " " + string(b[:limit]) + "..."
	}
	return kind + " " + string(b)
}

type jsonString struct {
	s  string
	st uint8
}

func (v *jsonString) UnmarshalJSON(b []byte) error {
	if b[0] != '"' {
		v.st = stBad
		return nil
	}
	v.st = stOK
	return json.Unmarshal(b, &v.s)
}

// jsonInt accepts integer literals in int32 range only: ranks, steps and
// chunks are counts, and 2.5 or "2" in one is a bug upstream.
type jsonInt struct {
	v  int32
	st uint8
}

func (v *jsonInt) UnmarshalJSON(b []byte) error {
	digits := b
	if b[0] == '-' {
		digits = b[1:]
	}
	v.st = stBad
	if len(digits) == 0 {
		return nil
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil
		}
		if n <= math.MaxInt32+1 {
			n = n*10 + int64(c-'0')
		}
	}
	if b[0] == '-' {
		n = -n
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		v.st = stRange
		return nil
	}
	v.v, v.st = int32(n), stOK
	return nil
}

type jsonFloat struct {
	v  float64
	st uint8
}

func (v *jsonFloat) UnmarshalJSON(b []byte) error {
	if b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		v.st = stBad
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		v.st = stRange
		return nil
	}
	v.v, v.st = f, stOK
	return nil
}

// jsonKindV is a flow kind by name.
type jsonKindV struct {
	k  ten.Kind
	st uint8
}

func (v *jsonKindV) UnmarshalJSON(b []byte) error {
	v.st = stOK
	switch string(b) {
	case `"reduce"`:
		v.k = ten.KindReduce
		return nil
	case `"copy"`:
		v.k = ten.KindCopy
		return nil
	}
	var s string
	if b[0] != '"' || json.Unmarshal(b, &s) != nil {
		v.st = stBad
		return nil
	}
	k, err := ten.ParseKind(s)
	if err != nil {
		v.st = stRange
		return nil
	}
	v.k = k
	return nil
}
