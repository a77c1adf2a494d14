package wire_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
	"github.com/vmihailenco/msgpack/v5"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// small is the pattern of the golden files: a 3-rank reduce-then-copy
// allreduce in two chunks with fractions that need all 17 digits.
func small() *ten.Pattern {
	return &ten.Pattern{Op: ten.AllReduce, Algo: "hand", Ranks: 3, Root: -1, Flows: []ten.Flow{
		{Chunk: 0, Step: 1, Src: 1, Dst: 0, Kind: ten.KindReduce, Fraction: 1.0 / 3},
		{Chunk: 0, Step: 2, Src: 2, Dst: 0, Kind: ten.KindReduce, Fraction: 1.0 / 3},
		{Chunk: 0, Step: 3, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 1.0 / 3},
		{Chunk: 0, Step: 3, Src: 0, Dst: 2, Kind: ten.KindCopy, Fraction: 1.0 / 3},
		{Chunk: 1, Step: 1, Src: 0, Dst: 2, Kind: ten.KindReduce, Fraction: 2.0 / 3},
		{Chunk: 1, Step: 2, Src: 1, Dst: 2, Kind: ten.KindReduce, Fraction: 2.0 / 3},
		{Chunk: 1, Step: 3, Src: 2, Dst: 0, Kind: ten.KindCopy, Fraction: 2.0 / 3},
		{Chunk: 1, Step: 3, Src: 2, Dst: 1, Kind: ten.KindCopy, Fraction: 2.0 / 3},
	}}
}

func handBuilt() map[string]*ten.Pattern {
	return map[string]*ten.Pattern{
		"small": small(),
		"two ranks": {Op: ten.AllReduce, Algo: "", Ranks: 2, Root: -1, Flows: []ten.Flow{
			{Step: 1, Src: 0, Dst: 1, Kind: ten.KindReduce, Fraction: 1},
			{Step: 2, Src: 1, Dst: 0, Kind: ten.KindCopy, Fraction: 1},
		}},
		"broadcast root 2, odd algo name": {Op: ten.Broadcast, Algo: "tree \"β\"\n\x01", Ranks: 4, Root: 2, Flows: []ten.Flow{
			{Step: 1, Src: 2, Dst: 0, Kind: ten.KindCopy, Fraction: 1},
			{Step: 2, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 1},
			{Step: 2, Src: 2, Dst: 3, Kind: ten.KindCopy, Fraction: 1},
		}},
		"tiny fractions, big ids": {Op: ten.AllGather, Algo: "x", Ranks: ten.MaxRanks, Root: -1, Flows: []ten.Flow{
			{Chunk: 2, Step: ten.MaxSteps, Src: ten.MaxRanks - 1, Dst: 0, Kind: ten.KindCopy, Fraction: 1e-300},
			{Chunk: 1, Step: 1, Src: 0, Dst: 5, Kind: ten.KindCopy, Fraction: math.Nextafter(1, 0)},
			{Chunk: 0, Step: 9, Src: 5, Dst: 3, Kind: ten.KindReduce, Fraction: 5e-324},
		}},
	}
}

// generated returns every pattern the generators make for a few rank counts.
func generated(t testing.TB) map[string]*ten.Pattern {
	out := map[string]*ten.Pattern{}
	for _, op := range []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce} {
		for _, algo := range pattern.Algos(op) {
			for _, n := range []int{2, 3, 5, 8, 13} {
				root := -1
				if op.Rooted() {
					root = n / 2
				}
				p, err := pattern.Generate(op, algo, n, root)
				if err != nil {
					t.Fatalf("Generate(%v, %s, %d, %d): %v", op, algo, n, root, err)
				}
				out[fmt.Sprintf("%v %s %d", op, algo, n)] = p
			}
		}
	}
	return out
}

func roundTripJSON(p *ten.Pattern) (*ten.Pattern, []byte, error) {
	var buf bytes.Buffer
	if err := wire.EncodeJSON(&buf, p); err != nil {
		return nil, nil, err
	}
	q, err := wire.DecodeJSON(buf.Bytes())
	return q, buf.Bytes(), err
}

func roundTripMsgpack(p *ten.Pattern) (*ten.Pattern, []byte, error) {
	b, err := wire.EncodeMsgpack(p)
	if err != nil {
		return nil, nil, err
	}
	q, err := wire.DecodeMsgpack(b)
	return q, b, err
}

func TestRoundTrip(t *testing.T) {
	all := handBuilt()
	for name, p := range generated(t) {
		all["generated "+name] = p
	}
	forms := []struct {
		name string
		rt   func(*ten.Pattern) (*ten.Pattern, []byte, error)
	}{{"json", roundTripJSON}, {"msgpack", roundTripMsgpack}}
	for name, p := range all {
		for _, form := range forms {
			t.Run(form.name+"/"+name, func(t *testing.T) {
				q, _, err := form.rt(p)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(p, q) {
					t.Fatalf("round trip changed the pattern:\n got %+v\nwant %+v", q, p)
				}
			})
		}
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	p := small()
	p.Flows[2].Dst = 9
	if err := wire.EncodeJSON(&bytes.Buffer{}, p); err == nil || !strings.Contains(err.Error(), "flow 2: dst") {
		t.Errorf("EncodeJSON error = %v, want one naming flow 2's dst", err)
	}
	if _, err := wire.EncodeMsgpack(p); err == nil || !strings.Contains(err.Error(), "flow 2: dst") {
		t.Errorf("EncodeMsgpack error = %v, want one naming flow 2's dst", err)
	}
}

func TestGolden(t *testing.T) {
	var js bytes.Buffer
	if err := wire.EncodeJSON(&js, small()); err != nil {
		t.Fatal(err)
	}
	mp, err := wire.EncodeMsgpack(small())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		file   string
		got    []byte
		decode func([]byte) (*ten.Pattern, error)
	}{{"small.json", js.Bytes(), wire.DecodeJSON}, {"small.msgpack", mp, wire.DecodeMsgpack}} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s: encoding differs from the golden file (go test -update rewrites it)\n got %q\nwant %q", g.file, g.got, want)
		}
		p, err := g.decode(want)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if !reflect.DeepEqual(p, small()) {
			t.Errorf("%s decodes to %+v", g.file, p)
		}
	}
}

// TestMsgpackLayout reads the encoding with the generic msgpack decoder, the
// way a Python or C reader sees it.
func TestMsgpackLayout(t *testing.T) {
	b, err := wire.EncodeMsgpack(small())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := msgpack.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"format": "react.pattern/v1", "op": "allreduce", "algo": "hand", "ranks": int8(3), "root": int8(-1), "nflows": int8(8)} {
		if !reflect.DeepEqual(doc[k], want) {
			t.Errorf("%s = %#v, want %#v", k, doc[k], want)
		}
	}
	flows := doc["flows"].(map[string]any)
	src := flows["src"].(map[string]any)
	if src["dtype"] != "<i4" || !reflect.DeepEqual(src["shape"], []any{int8(8)}) {
		t.Errorf("src column header = %v", src)
	}
	data := src["data"].([]byte)
	for i, f := range small().Flows {
		if got := int32(binary.LittleEndian.Uint32(data[4*i:])); got != f.Src {
			t.Errorf("src[%d] = %d, want %d", i, got, f.Src)
		}
	}
	kind := flows["kind"].(map[string]any)
	if kind["dtype"] != "|u1" || kind["data"].([]byte)[2] != 2 {
		t.Errorf("kind column = %v", kind)
	}
	frac := flows["fraction"].(map[string]any)
	if got := math.Float64frombits(binary.LittleEndian.Uint64(frac["data"].([]byte)[8:])); frac["dtype"] != "<f8" || got != 1.0/3 {
		t.Errorf("fraction column = %v (fraction[1] = %v)", frac, got)
	}
}

const validJSON = `{"format": "react.pattern/v1", "op": "allreduce", "algo": "t", "ranks": 2, "root": -1, "extra": [1, {"x": null}],
"flows": [{"chunk": 0, "step": 1, "src": 0, "dst": 1, "kind": "reduce", "fraction": 1, "note": "ignored"},
{"chunk": 0, "step": 2, "src": 1, "dst": 0, "kind": "copy", "fraction": 1.0}]}`

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // substring of the error; "" means it decodes
	}{
		{"valid with extra fields", validJSON, ""},
		{"empty input", ``, "empty input"},
		{"cut short", validJSON[:40], "input ends early, after 40 bytes"},
		{"syntax error", "{\"format\": \"react.pattern/v1\",\n  \"op\": }", "invalid JSON at line 2, column 9 (byte 39)"},
		{"top level array", `[]`, "top level: got a JSON array, want an object"},
		{"missing format", strings.Replace(validJSON, `"format": "react.pattern/v1",`, ``, 1), "format: missing"},
		{"wrong format", strings.Replace(validJSON, `pattern/v1`, `pattern/v2`, 1), `format: "react.pattern/v2" is not "react.pattern/v1"`},
		{"format not a string", strings.Replace(validJSON, `"react.pattern/v1"`, `1`, 1), "format: want a string, got number 1"},
		{"unknown op", strings.Replace(validJSON, `"allreduce"`, `"alltoall"`, 1), `op: unknown op "alltoall"`},
		{"missing op", strings.Replace(validJSON, `"op": "allreduce",`, ``, 1), "op: missing"},
		{"missing algo", strings.Replace(validJSON, `"algo": "t",`, ``, 1), "algo: missing"},
		{"missing ranks", strings.Replace(validJSON, `"ranks": 2,`, ``, 1), "ranks: missing"},
		{"ranks a float", strings.Replace(validJSON, `"ranks": 2`, `"ranks": 2.0`, 1), "ranks: want an integer, got number 2.0"},
		{"ranks a string", strings.Replace(validJSON, `"ranks": 2`, `"ranks": "2"`, 1), `ranks: want an integer, got string "2"`},
		{"ranks huge", strings.Replace(validJSON, `"ranks": 2`, `"ranks": 99999999999999999999999`, 1), "ranks: 99999999999999999999999 is out of int32 range"},
		{"ranks beyond int32", strings.Replace(validJSON, `"ranks": 2`, `"ranks": 4294967296`, 1), "ranks: 4294967296 is out of int32 range"},
		{"ranks 1", strings.Replace(validJSON, `"ranks": 2`, `"ranks": 1`, 1), "ranks: need at least 2 ranks, got 1"},
		{"missing root", strings.Replace(validJSON, `"root": -1,`, ``, 1), "root: missing"},
		{"root null", strings.Replace(validJSON, `"root": -1`, `"root": null`, 1), "root: want an integer, got null"},
		{"missing flows", `{"format": "react.pattern/v1", "op": "allreduce", "algo": "t", "ranks": 2, "root": -1}`, "flows: missing"},
		{"flows not an array", strings.Replace(validJSON, `"flows": [`, `"flows": 3, "x": [`, 1), "flows: got a JSON number, want an array"},
		{"empty flows", `{"format": "react.pattern/v1", "op": "allreduce", "algo": "t", "ranks": 2, "root": -1, "flows": []}`, "no flows"},
		{"unknown kind", strings.Replace(validJSON, `"copy"`, `"add"`, 1), `flow 1: kind: unknown flow kind "add"`},
		{"kind a number", strings.Replace(validJSON, `"copy"`, `2`, 1), `flow 1: kind: want "reduce" or "copy", got number 2`},
		{"missing step", strings.Replace(validJSON, `"step": 2, `, ``, 1), "flow 1: step: missing"},
		{"missing kind", strings.Replace(validJSON, `"kind": "copy", `, ``, 1), "flow 1: kind: missing"},
		{"missing fraction", strings.Replace(validJSON, `, "fraction": 1.0`, ``, 1), "flow 1: fraction: missing"},
		{"fraction a string", strings.Replace(validJSON, `"fraction": 1.0`, `"fraction": "1"`, 1), `flow 1: fraction: want a number, got string "1"`},
		{"fraction overflow", strings.Replace(validJSON, `"fraction": 1.0`, `"fraction": 1e999`, 1), `flow 1: fraction: 1e999 is out of float64 range`},
		{"src a float", strings.Replace(validJSON, `"src": 1`, `"src": 1.5`, 1), "flow 1: src: want an integer, got number 1.5"},
		{"src beyond int32", strings.Replace(validJSON, `"src": 1`, `"src": -2147483649`, 1), "flow 1: src: -2147483649 is out of int32 range"},
		{"rank out of range", strings.Replace(validJSON, `"dst": 0`, `"dst": 2`, 1), "flow 1: dst: rank 2 out of range [0, 2)"},
		{"flow not an object", strings.Replace(validJSON, `"flows": [`, `"flows": [7, `, 1), "flows: got a JSON number, want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := wire.DecodeJSON([]byte(tt.input))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DecodeJSON: %v", err)
				}
				if len(p.Flows) != 2 || p.Flows[1].Kind != ten.KindCopy {
					t.Fatalf("decoded %+v", p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeJSON error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// doc is an editable generic form of a msgpack pattern for error tests.
func doc(t *testing.T) map[string]any {
	b, err := wire.EncodeMsgpack(small())
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := msgpack.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func col(d map[string]any, name string) map[string]any {
	return d["flows"].(map[string]any)[name].(map[string]any)
}

func TestDecodeMsgpackErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d map[string]any)
		want   string
	}{
		{"unknown keys skipped", func(d map[string]any) {
			d["extra"] = []any{map[string]any{"a": []any{1, 2.5, nil}}}
			d["flows"].(map[string]any)["start"] = map[string]any{"dtype": "<f8"}
			col(d, "src")["strides"] = []any{4}
		}, ""},
		{"not a map", nil, "pattern: want a map, got array"},
		{"missing format", func(d map[string]any) { delete(d, "format") }, `key "format" missing`},
		{"wrong format", func(d map[string]any) { d["format"] = "react.pattern/v0" }, `format: "react.pattern/v0" is not`},
		{"format not str", func(d map[string]any) { d["format"] = []byte("react.pattern/v1") }, "format: want a str, got bin"},
		{"unknown op", func(d map[string]any) { d["op"] = "gather" }, `op: unknown op "gather"`},
		{"ranks float", func(d map[string]any) { d["ranks"] = 3.0 }, "ranks: want an int, got float"},
		{"ranks nil", func(d map[string]any) { d["ranks"] = nil }, "ranks: want an int, got nil"},
		{"ranks 1", func(d map[string]any) { d["ranks"] = 1 }, "need at least 2 ranks"},
		{"ranks huge", func(d map[string]any) { d["ranks"] = uint64(math.MaxUint64) }, "ranks: 18446744073709551615 out of range"},
		{"nflows negative", func(d map[string]any) { d["nflows"] = -1 }, "nflows: -1 out of range"},
		{"missing nflows", func(d map[string]any) { delete(d, "nflows") }, `key "nflows" missing`},
		{"missing flows", func(d map[string]any) { delete(d, "flows") }, `key "flows" missing`},
		{"flows an array", func(d map[string]any) { d["flows"] = []any{} }, "flows: want a map, got array"},
		{"missing column", func(d map[string]any) { delete(d["flows"].(map[string]any), "kind") }, `column "kind": missing`},
		{"wrong dtype", func(d map[string]any) { col(d, "src")["dtype"] = "<i8" }, `column "src": dtype "<i8", want "<i4"`},
		{"missing dtype", func(d map[string]any) { delete(col(d, "dst"), "dtype") }, `column "dst": key "dtype" missing`},
		{"shape mismatch", func(d map[string]any) { col(d, "step")["shape"] = []any{7} }, `column "step": shape [7], want [8] (from nflows)`},
		{"shape 2-d", func(d map[string]any) { col(d, "step")["shape"] = []any{8, 1} }, `column "step": shape: 2 dimensions, want 1`},
		{"shape not array", func(d map[string]any) { col(d, "step")["shape"] = 8 }, `column "step": shape: want an array, got int`},
		{"shape huge", func(d map[string]any) { col(d, "step")["shape"] = []any{int64(1) << 40} }, `column "step": shape: 1099511627776 out of range`},
		{"missing shape", func(d map[string]any) { delete(col(d, "chunk"), "shape") }, `column "chunk": key "shape" missing`},
		{"short data", func(d map[string]any) {
			c := col(d, "fraction")
			c["data"] = c["data"].([]byte)[:63]
		}, `column "fraction": data has 63 bytes, want 64 (shape [8] x 8 bytes)`},
		{"missing data", func(d map[string]any) { delete(col(d, "kind"), "data") }, `column "kind": key "data" missing`},
		{"data an array", func(d map[string]any) { col(d, "kind")["data"] = []any{1, 2} }, `column "kind": data: want a bin, got array`},
		{"bad kind value", func(d map[string]any) { col(d, "kind")["data"].([]byte)[5] = 3 }, "flow 5: kind: unknown kind 3"},
		{"rank out of range", func(d map[string]any) {
			binary.LittleEndian.PutUint32(col(d, "dst")["data"].([]byte)[4:], 3)
		}, "flow 1: dst: rank 3 out of range [0, 3)"},
		{"fraction NaN", func(d map[string]any) {
			binary.LittleEndian.PutUint64(col(d, "fraction")["data"].([]byte), math.Float64bits(math.NaN()))
		}, "flow 0: fraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in any = []any{}
			if tt.mutate != nil {
				d := doc(t)
				tt.mutate(d)
				in = d
			}
			b, err := msgpack.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := wire.DecodeMsgpack(b)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DecodeMsgpack: %v", err)
				}
				if !reflect.DeepEqual(p, small()) {
					t.Fatalf("decoded %+v", p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeMsgpack error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeMsgpackFraming(t *testing.T) {
	b, err := wire.EncodeMsgpack(small())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i++ {
		if _, err := wire.DecodeMsgpack(b[:i]); err == nil {
			t.Fatalf("prefix of %d of %d bytes decoded", i, len(b))
		} else if i > 0 && !strings.Contains(err.Error(), "truncated input") {
			t.Fatalf("prefix of %d bytes: error %v, want truncated input", i, err)
		}
	}
	_, err = wire.DecodeMsgpack(append(b[:len(b):len(b)], 0xc0, 0x01))
	if err == nil || !strings.Contains(err.Error(), "trailing garbage: 2 bytes") {
		t.Errorf("trailing bytes: error %v", err)
	}
	// A duplicate key, and a value nested past the skip limit.
	dup := []byte("\x82\xa2op\xa6reduce\xa2op\xa6reduce")
	if _, err := wire.DecodeMsgpack(dup); err == nil || !strings.Contains(err.Error(), `key "op" appears twice`) {
		t.Errorf("duplicate key: error %v", err)
	}
	deep := append([]byte{0x81, 0xa1, 'x'}, bytes.Repeat([]byte{0x91}, 100000)...)
	if _, err := wire.DecodeMsgpack(deep); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep nesting: error %v", err)
	}
	huge := []byte{0x81, 0xa1, 'x', 0xc6, 0xff, 0xff, 0xff, 0xff}
	if _, err := wire.DecodeMsgpack(huge); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("huge bin: error %v", err)
	}
}

func fuzzSeeds(f *testing.F, enc func(*ten.Pattern) ([]byte, error)) {
	for _, p := range handBuilt() {
		b, err := enc(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, n := range []int{2, 5} {
		p, err := pattern.Generate(ten.AllReduce, "tree", n, -1)
		if err != nil {
			f.Fatal(err)
		}
		b, err := enc(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func encodeJSON(p *ten.Pattern) ([]byte, error) {
	var buf bytes.Buffer
	err := wire.EncodeJSON(&buf, p)
	return buf.Bytes(), err
}

// fuzzDecode checks that decode never panics and that whatever decodes is
// a fixed point of encode then decode.
func fuzzDecode(t *testing.T, data []byte, dec func([]byte) (*ten.Pattern, error), enc func(*ten.Pattern) ([]byte, error)) {
	p, err := dec(data)
	if err != nil {
		return
	}
	b, err := enc(p)
	if err != nil {
		t.Fatalf("decoded pattern does not encode: %v", err)
	}
	q, err := dec(b)
	if err != nil {
		t.Fatalf("re-encoding does not decode: %v", err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("re-encoding changed the pattern:\n got %+v\nwant %+v", q, p)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	fuzzSeeds(f, encodeJSON)
	f.Add([]byte(validJSON))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, wire.DecodeJSON, encodeJSON) })
}

func FuzzDecodeMsgpack(f *testing.F) {
	fuzzSeeds(f, wire.EncodeMsgpack)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, wire.DecodeMsgpack, wire.EncodeMsgpack) })
}

// ring1024 has the shape of a 1024-rank ring allreduce: 2*1023*1024 flows.
func ring1024() *ten.Pattern {
	const n = 1024
	p := &ten.Pattern{Op: ten.AllReduce, Algo: "ring", Ranks: n, Root: -1, Flows: make([]ten.Flow, 0, 2*(n-1)*n)}
	for s := 1; s <= 2*(n-1); s++ {
		kind := ten.KindReduce
		if s >= n {
			kind = ten.KindCopy
		}
		for r := 0; r < n; r++ {
			p.Flows = append(p.Flows, ten.Flow{Chunk: int32((r - s + 1 + 2*n) % n), Step: int32(s), Src: int32(r), Dst: int32((r + 1) % n), Kind: kind, Fraction: 1.0 / n})
		}
	}
	return p
}

func BenchmarkEncodeMsgpack(b *testing.B) {
	p := ring1024()
	enc, _ := wire.EncodeMsgpack(p)
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := wire.EncodeMsgpack(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMsgpack(b *testing.B) {
	enc, err := wire.EncodeMsgpack(ring1024())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := wire.DecodeMsgpack(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeJSON(b *testing.B) {
	p := ring1024()
	var buf bytes.Buffer
	if err := wire.EncodeJSON(&buf, p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		buf.Reset()
		if err := wire.EncodeJSON(&buf, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	var buf bytes.Buffer
	if err := wire.EncodeJSON(&buf, ring1024()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := wire.DecodeJSON(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
