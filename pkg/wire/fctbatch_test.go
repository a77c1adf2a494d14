package wire_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/wire"
	"github.com/vmihailenco/msgpack/v5"
)

func smallBatch() *wire.FCTBatch {
	return &wire.FCTBatch{Epoch0: 12, Version: 3, Epochs: 2, Flows: 3,
		FCT:     []float64{1e-3, 2e-3, 1.0 / 3, 4e-6, 5e-6, 6e-6},
		Elapsed: []float64{0.0042, 0}}
}

func TestFCTBatchRoundTrip(t *testing.T) {
	big := &wire.FCTBatch{Epoch0: 1 << 40, Version: math.MaxInt32, Epochs: 6, Flows: 112, FCT: make([]float64, 6*112), Elapsed: make([]float64, 6)}
	for i := range big.FCT {
		big.FCT[i] = 1e-6 * float64(i+1)
	}
	arr := smallBatch()
	arr.Arrival = true
	ent := smallBatch()
	ent.Arrival, ent.Ranks, ent.Entry = true, 3, []float64{0.5, 0.25, -2, 7, 7, 7.125}
	for _, tc := range []struct {
		name string
		b    *wire.FCTBatch
	}{{"small", smallBatch()}, {"big", big}, {"arrival", arr}, {"entry", ent}} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := wire.EncodeFCTBatch(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.DecodeFCTBatch(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.b) {
				t.Fatalf("round trip changed the batch:\n got %+v\nwant %+v", got, tc.b)
			}
			if r := got.Row(1); len(r) != tc.b.Flows || r[0] != tc.b.FCT[tc.b.Flows] {
				t.Fatalf("Row(1) = %v", r)
			}
			if r := got.EntryRow(1); len(r) != tc.b.Ranks || (r != nil && r[0] != tc.b.Entry[tc.b.Ranks]) {
				t.Fatalf("EntryRow(1) = %v", r)
			}
			// Appending to a used buffer keeps what was there.
			buf, err := wire.AppendFCTBatch([]byte("xyz"), tc.b)
			if err != nil || string(buf[:3]) != "xyz" || !bytes.Equal(buf[3:], enc) {
				t.Fatalf("AppendFCTBatch: %v, prefix %q", err, buf[:3])
			}
		})
	}
}

func TestFCTBatchGolden(t *testing.T) {
	got, err := wire.EncodeFCTBatch(smallBatch())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "batch.msgpack")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encoding differs from %s (go test -update rewrites it)\n got %q\nwant %q", path, got, want)
	}
}

// TestFCTBatchPythonShape decodes what a generic msgpack writer (as Python's
// would) produces, keys in another order with an unknown one.
func TestFCTBatchPythonShape(t *testing.T) {
	m := map[string]any{
		"nflows": 2, "epochs": 1, "version": 0, "epoch0": 0, "format": "react.fcts/v1", "comment": []any{1, "x"},
		"fct":     map[string]any{"data": f8(1e-3, 2e-3), "shape": []int{1, 2}, "dtype": "<f8", "strides": nil},
		"elapsed": map[string]any{"dtype": "<f8", "shape": []int{1}, "data": f8(0.5)},
	}
	enc, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.DecodeFCTBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	if b.Epochs != 1 || b.Flows != 2 || b.FCT[1] != 2e-3 || b.Elapsed[0] != 0.5 {
		t.Fatalf("decoded %+v", b)
	}
}

func f8(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = append(b, make([]byte, 8)...)
		u := math.Float64bits(v)
		for i := range 8 {
			b[len(b)-8+i] = byte(u >> (8 * i))
		}
	}
	return b
}

func TestDecodeFCTBatchErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"format": "react.fcts/v1", "epoch0": 5, "version": 1, "epochs": 2, "nflows": 2,
			"fct":     map[string]any{"dtype": "<f8", "shape": []int{2, 2}, "data": f8(1, 2, 3, 4)},
			"elapsed": map[string]any{"dtype": "<f8", "shape": []int{2}, "data": f8(0, 1)},
		}
	}
	col := func(m map[string]any, name string) map[string]any { return m[name].(map[string]any) }
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"wrong format", func(m map[string]any) { m["format"] = "react.fcts/v0" }, `format: "react.fcts/v0"`},
		{"missing format", func(m map[string]any) { delete(m, "format") }, `key "format" missing`},
		{"missing elapsed", func(m map[string]any) { delete(m, "elapsed") }, `key "elapsed" missing`},
		{"negative epoch0", func(m map[string]any) { m["epoch0"] = -1 }, "epoch0: -1 out of range"},
		{"zero epochs", func(m map[string]any) { m["epochs"] = 0 }, "epochs: 0 out of range"},
		{"float nflows", func(m map[string]any) { m["nflows"] = 2.0 }, "nflows: want an int, got float"},
		{"fct not a map", func(m map[string]any) { m["fct"] = []int{1} }, "fct: want a map, got array"},
		{"fct dtype", func(m map[string]any) { col(m, "fct")["dtype"] = "<f4" }, `fct: dtype "<f4"`},
		{"fct 1-d", func(m map[string]any) { col(m, "fct")["shape"] = []int{4} }, "fct: shape [4] has 1 dimensions, want 2"},
		{"fct 3-d", func(m map[string]any) { col(m, "fct")["shape"] = []int{1, 2, 2} }, "fct: shape: 3 dimensions, want 1 to 2"},
		{"elapsed 0-d", func(m map[string]any) { col(m, "elapsed")["shape"] = []int{} }, "elapsed: shape: 0 dimensions, want 1 to 2"},
		{"fct shape mismatch", func(m map[string]any) { col(m, "fct")["shape"] = []int{2, 3} }, "fct: shape [2 3], want [2 2] (from epochs and nflows)"},
		{"fct shape not array", func(m map[string]any) { col(m, "fct")["shape"] = 4 }, "fct: shape: want an array, got int"},
		{"fct shape negative", func(m map[string]any) { col(m, "fct")["shape"] = []int{-2, 2} }, "fct: shape: -2 out of range"},
		{"fct short data", func(m map[string]any) { col(m, "fct")["data"] = f8(1, 2, 3) }, "fct: data has 24 bytes, want 32"},
		{"fct no data", func(m map[string]any) { delete(col(m, "fct"), "data") }, `fct: key "data" missing`},
		{"fct zero", func(m map[string]any) { col(m, "fct")["data"] = f8(1, 0, 3, 4) }, "fct: epoch 5 flow 1: 0, want a positive finite time"},
		{"fct inf", func(m map[string]any) { col(m, "fct")["data"] = f8(1, 2, 3, math.Inf(1)) }, "fct: epoch 6 flow 1: +Inf"},
		{"elapsed NaN", func(m map[string]any) { col(m, "elapsed")["data"] = f8(0, math.NaN()) }, "elapsed: epoch 6: NaN"},
		{"elapsed negative", func(m map[string]any) { col(m, "elapsed")["data"] = f8(-1, 0) }, "elapsed: epoch 5: -1"},
		{"elapsed shape", func(m map[string]any) { col(m, "elapsed")["shape"] = []int{2, 1} }, "elapsed: shape [2 1] has 2 dimensions, want 1"},
		{"arrival not a bool", func(m map[string]any) { m["arrival"] = 1 }, "arrival: want a bool, got int"},
		{"entry without arrival", func(m map[string]any) { m["entry"] = entry(2, 0, 1, 2, 3) }, "entry without arrival"},
		{"entry 1-d", func(m map[string]any) {
			m["arrival"], m["entry"] = true, map[string]any{"dtype": "<f8", "shape": []int{2}, "data": f8(0, 1)}
		}, "entry: shape [2], want [2, ranks]"},
		{"entry no ranks", func(m map[string]any) { m["arrival"], m["entry"] = true, entry(0, 0) }, "entry: shape [2 0], want [2, ranks]"},
		{"entry epochs", func(m map[string]any) {
			m["arrival"], m["entry"] = true, map[string]any{"dtype": "<f8", "shape": []int{3, 1}, "data": f8(0, 1, 2)}
		}, "entry: shape [3 1], want [2 1]"},
		{"entry short", func(m map[string]any) {
			m["arrival"], m["entry"] = true, map[string]any{"dtype": "<f8", "shape": []int{2, 2}, "data": f8(0, 1, 2)}
		}, "entry: data has 24 bytes, want 32"},
		{"entry NaN", func(m map[string]any) { m["arrival"], m["entry"] = true, entry(2, 0, 1, math.NaN(), 3) }, "entry: epoch 6 rank 0: NaN"},
		{"entry huge", func(m map[string]any) {
			m["arrival"], m["entry"] = true, map[string]any{"dtype": "<f8", "shape": []int{2, 1 << 21}, "data": f8(0)}
		}, "with ranks in [1, 1048576]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.edit(m)
			enc, err := msgpack.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = wire.DecodeFCTBatch(enc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// entry is an entry column of 2 epochs and ranks ranks.
func entry(ranks int, vals ...float64) map[string]any {
	return map[string]any{"dtype": "<f8", "shape": []int{2, ranks}, "data": f8(vals...)}
}

func TestDecodeFCTBatchFraming(t *testing.T) {
	enc, _ := wire.EncodeFCTBatch(smallBatch())
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated input"},
		{"not a map", []byte{0x91, 0x01}, "want a map, got array"},
		{"trailing", append(append([]byte{}, enc...), 0xc0), "trailing garbage: 1 bytes"},
		{"duplicate key", dupKey(), `key "epochs" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.DecodeFCTBatch(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	for n := range len(enc) {
		if _, err := wire.DecodeFCTBatch(enc[:n]); err == nil {
			t.Fatalf("prefix of %d of %d bytes decoded", n, len(enc))
		}
	}
}

func dupKey() []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("epochs")
	e.EncodeInt(1)
	e.EncodeString("epochs")
	e.EncodeInt(1)
	return buf.Bytes()
}

func TestEncodeFCTBatchRefusesInvalid(t *testing.T) {
	for _, edit := range []func(b *wire.FCTBatch){
		func(b *wire.FCTBatch) { b.FCT = b.FCT[:5] },
		func(b *wire.FCTBatch) { b.Elapsed = nil },
		func(b *wire.FCTBatch) { b.FCT[0] = -1 },
		func(b *wire.FCTBatch) { b.Version = -1 },
		func(b *wire.FCTBatch) { b.Ranks, b.Entry = 1, []float64{0, 0} }, // entry without arrival
		func(b *wire.FCTBatch) { b.Arrival, b.Ranks, b.Entry = true, 2, []float64{0, 0} },
		func(b *wire.FCTBatch) { b.Arrival, b.Ranks = true, 2 },
	} {
		b := smallBatch()
		edit(b)
		if _, err := wire.EncodeFCTBatch(b); err == nil || !strings.Contains(err.Error(), "refusing to encode") {
			t.Fatalf("encoded %+v: %v", b, err)
		}
	}
}

func FuzzDecodeFCTBatch(f *testing.F) {
	enc, _ := wire.EncodeFCTBatch(smallBatch())
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Add([]byte{0x80})
	ent := smallBatch()
	ent.Arrival, ent.Ranks, ent.Entry = true, 2, []float64{0, 1, 2, 3}
	enc, _ = wire.EncodeFCTBatch(ent)
	f.Add(enc)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := wire.DecodeFCTBatch(data)
		if err != nil {
			return
		}
		again, err := wire.EncodeFCTBatch(b)
		if err != nil {
			t.Fatalf("decoded batch does not encode: %v", err)
		}
		b2, err := wire.DecodeFCTBatch(again)
		if err != nil || !reflect.DeepEqual(b, b2) {
			t.Fatalf("re-encoding changed the batch: %v", err)
		}
	})
}

func batch8x6() *wire.FCTBatch {
	b := &wire.FCTBatch{Epochs: 6, Flows: 112, FCT: make([]float64, 6*112), Elapsed: make([]float64, 6)}
	for i := range b.FCT {
		b.FCT[i] = 1e-5 + 1e-9*float64(i)
	}
	return b
}

func BenchmarkEncodeFCTBatch(b *testing.B) {
	bt := batch8x6()
	buf, _ := wire.EncodeFCTBatch(bt)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		var err error
		if buf, err = wire.AppendFCTBatch(buf[:0], bt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFCTBatch(b *testing.B) {
	enc, _ := wire.EncodeFCTBatch(batch8x6())
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := wire.DecodeFCTBatch(enc); err != nil {
			b.Fatal(err)
		}
	}
}
