package wire

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func sampleLog(t testing.TB, epochs, flows int, elapsed bool) []byte {
	var b bytes.Buffer
	for e := range epochs {
		for f := range flows {
			r := FCTRecord{Epoch: e * 2, Version: e / 3, Flow: f, Chunk: f % 2, Step: 1 + f/2, Src: f, Dst: (f + 1) % flows,
				Bytes: 1e6, FCT: 1e-4 * float64(1+f+e)}
			if err := EncodeFCTRecord(&b, r); err != nil {
				t.Fatal(err)
			}
		}
		if elapsed {
			if err := EncodeFCTRecord(&b, FCTRecord{Epoch: e * 2, Version: e / 3, Flow: EpochRecord, Elapsed: 1e-3 * float64(e+1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.Bytes()
}

func TestFCTLogRoundTrip(t *testing.T) {
	for _, elapsed := range []bool{false, true} {
		data := sampleLog(t, 7, 3, elapsed)
		got, err := ReadFCTLog(bytes.NewReader(data), 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 7 {
			t.Fatalf("%d epochs, want 7", len(got))
		}
		for i, e := range got {
			want := FCTEpoch{Epoch: 2 * i, Version: i / 3, FCT: []float64{1e-4 * float64(1+i), 1e-4 * float64(2+i), 1e-4 * float64(3+i)}, Bytes: []float64{1e6, 1e6, 1e6}}
			if elapsed {
				want.Elapsed = 1e-3 * float64(i+1)
			}
			if !reflect.DeepEqual(e, want) {
				t.Errorf("epoch %d = %+v, want %+v", i, e, want)
			}
		}
	}
}

func TestEncodeFCTRecordFormat(t *testing.T) {
	tests := []struct {
		r    FCTRecord
		want string
	}{
		{FCTRecord{Epoch: 12, Flow: 5, Chunk: 1, Step: 2, Src: 5, Dst: 3, Bytes: 1e6, FCT: 0.000324},
			`{"epoch": 12, "version": 0, "flow": 5, "chunk": 1, "step": 2, "src": 5, "dst": 3, "bytes": 1000000, "fct": 0.000324}` + "\n"},
		{FCTRecord{Epoch: 12, Flow: EpochRecord, Elapsed: 0.0013}, `{"epoch": 12, "version": 0, "elapsed": 0.0013}` + "\n"},
		{FCTRecord{Epoch: 3, Version: 1, Flow: 2, Bytes: 8, FCT: 0.5, Arrival: true},
			`{"epoch": 3, "version": 1, "flow": 2, "chunk": 0, "step": 0, "src": 0, "dst": 0, "bytes": 8, "arrival": 0.5}` + "\n"},
		{FCTRecord{Epoch: 3, Version: 1, Flow: EpochRecord, Entry: []float64{0.25, 1}}, `{"epoch": 3, "version": 1, "entry": [0.25, 1]}` + "\n"},
		{FCTRecord{Epoch: 3, Flow: EpochRecord, Elapsed: 2, Entry: []float64{0}}, `{"epoch": 3, "version": 0, "elapsed": 2, "entry": [0]}` + "\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := EncodeFCTRecord(&b, tt.r); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("got %q, want %q", b.String(), tt.want)
		}
	}
	bad := []FCTRecord{
		{Epoch: -1, Flow: 0, FCT: 1},
		{Flow: 0, FCT: 0},
		{Flow: 0, FCT: math.Inf(1)},
		{Flow: 0, FCT: math.NaN()},
		{Flow: 0, FCT: 1, Bytes: -1},
		{Flow: -2, FCT: 1},
		{Flow: EpochRecord, Elapsed: 0},
		{Flow: EpochRecord, Elapsed: -1, Entry: []float64{0}},
		{Flow: EpochRecord, Entry: []float64{math.NaN()}},
	}
	for _, r := range bad {
		if err := EncodeFCTRecord(&bytes.Buffer{}, r); err == nil {
			t.Errorf("EncodeFCTRecord(%+v) = nil, want an error", r)
		}
	}
}

func TestReadFCTLogErrors(t *testing.T) {
	rec := func(epoch, version, flow int, fct string) string {
		return `{"epoch": ` + itoa(epoch) + `, "version": ` + itoa(version) + `, "flow": ` + itoa(flow) + `, "fct": ` + fct + "}\n"
	}
	ok := rec(0, 0, 0, "1e-4") + rec(0, 0, 1, "1e-4")
	tests := []struct {
		name, log, want string
	}{
		{"malformed json", ok + "{\"epoch\": 1,\n", "line 3: malformed JSON"},
		{"not an object", ok + "[1, 2]\n", "line 3:"},
		{"float epoch", `{"epoch": 1.5, "version": 0, "flow": 0, "fct": 1}` + "\n", "line 1:"},
		{"missing epoch", `{"version": 0, "flow": 0, "fct": 1}` + "\n", `line 1: missing "epoch"`},
		{"missing version", `{"epoch": 0, "flow": 0, "fct": 1}` + "\n", `line 1: missing "version"`},
		{"negative epoch", rec(-1, 0, 0, "1"), "line 1: epoch -1"},
		{"flow out of range", ok + rec(1, 0, 2, "1"), "line 3: epoch 1: flow 2 out of range [0, 2)"},
		{"negative flow", rec(0, 0, -1, "1"), "line 1: epoch 0: flow -1 out of range"},
		{"duplicate flow", rec(0, 0, 1, "1") + "\n" + rec(0, 0, 1, "2"), "line 3: epoch 0: duplicate flow 1"},
		{"missing flow at next epoch", ok + rec(1, 0, 0, "1") + rec(2, 0, 0, "1"), "line 4: epoch 1 (from line 3) has 1 of 2 flows; flow 1 is missing"},
		{"missing flow at end", ok + rec(1, 0, 1, "1"), "end of input (line 3): epoch 1 (from line 3) has 1 of 2 flows; flow 0 is missing"},
		{"zero fct", rec(0, 0, 0, "0"), "line 1: epoch 0 flow 0: fct 0"},
		{"negative fct", rec(0, 0, 0, "-1e-3"), "line 1: epoch 0 flow 0: fct -0.001"},
		{"huge fct", rec(0, 0, 0, "1e999"), "line 1:"},
		{"missing fct", `{"epoch": 0, "version": 0, "flow": 0}` + "\n", `line 1: epoch 0 flow 0: missing "fct"`},
		{"epochs out of order", rec(3, 0, 0, "1") + rec(3, 0, 1, "1") + rec(2, 0, 0, "1"), "line 3: epoch 2 after epoch 3"},
		{"version changes in epoch", rec(0, 0, 0, "1") + rec(0, 1, 1, "1"), "line 2: epoch 0: version 1, but line 1 gave version 0"},
		{"two epoch records", ok + `{"epoch": 0, "version": 0, "elapsed": 1}` + "\n" + `{"epoch": 0, "version": 0, "elapsed": 1}` + "\n", "line 4: epoch 0: a second epoch record"},
		{"zero elapsed", ok + `{"epoch": 0, "version": 0, "elapsed": 0}` + "\n", "line 3: epoch 0: elapsed 0"},
		{"neither flow nor elapsed", ok + `{"epoch": 0, "version": 0}` + "\n", `line 3: epoch 0: a record with neither`},
		{"elapsed on a flow", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1, "elapsed": 1}` + "\n", `line 1: epoch 0 flow 0: "elapsed" and "entry" belong`},
		{"entry on a flow", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1, "entry": [0]}` + "\n", `line 1: epoch 0 flow 0: "elapsed" and "entry" belong`},
		{"empty entry", ok + `{"epoch": 0, "version": 0, "entry": []}` + "\n", "line 3: epoch 0: entry is empty"},
		{"entry not numbers", ok + `{"epoch": 0, "version": 0, "entry": ["a"]}` + "\n", "line 3: json: cannot unmarshal string"},
		{"negative bytes", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1, "bytes": -5}` + "\n", "line 1: epoch 0 flow 0: bytes -5"},
		{"epoch record alone", ok + `{"epoch": 1, "version": 0, "elapsed": 1}` + "\n", "end of input (line 3): epoch 1 (from line 3) has 0 of 2 flows"},
		{"fct and arrival", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1, "arrival": 1}` + "\n", `line 1: epoch 0 flow 0: both "fct" and "arrival"`},
		{"fct and arrival mixed", rec(0, 0, 0, "1") + `{"epoch": 0, "version": 0, "flow": 1, "arrival": 2}` + "\n", `line 2: epoch 0 flow 1: "fct" and "arrival" mixed`},
		{"zero arrival", `{"epoch": 0, "version": 0, "flow": 0, "arrival": 0}` + "\n", "line 1: epoch 0 flow 0: arrival 0"},
		{"arrival without flow", `{"epoch": 0, "version": 0, "arrival": 1, "elapsed": 1}` + "\n", `line 1: epoch 0: "fct" or "arrival" without "flow"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadFCTLog(strings.NewReader(tt.log), 2)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadFCTLog = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := ReadFCTLog(strings.NewReader(ok), 0); err == nil {
		t.Error("ReadFCTLog with 0 flows = nil error")
	}
}

func TestReadFCTLogLenient(t *testing.T) {
	log := "\n" + `{"epoch": 4, "version": 2, "elapsed": 0.5, "note": "x"}` + "\n  \n" +
		`{"fct": 0.25, "flow": 0, "version": 2, "epoch": 4, "host": "a"}` + "\r\n"
	got, err := ReadFCTLog(strings.NewReader(log), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []FCTEpoch{{Epoch: 4, Version: 2, FCT: []float64{0.25}, Bytes: []float64{0}, Elapsed: 0.5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	arr := `{"epoch": 1, "version": 0, "flow": 0, "arrival": 0.5}` + "\n"
	if got, err := ReadFCTLog(strings.NewReader(arr), 1); err != nil || !got[0].Arrival || got[0].FCT[0] != 0.5 {
		t.Fatalf("an arrival record read as %+v, %v", got, err)
	}
	ent := `{"epoch": 1, "version": 0, "flow": 0, "arrival": 0.5}` + "\n" + `{"epoch": 1, "version": 0, "entry": [2.5, -1]}` + "\n"
	if got, err := ReadFCTLog(strings.NewReader(ent), 1); err != nil || !reflect.DeepEqual(got[0].Entry, []float64{2.5, -1}) || got[0].Elapsed != 0 {
		t.Fatalf("an epoch record of entries alone read as %+v, %v", got, err)
	}
	if got, err := ReadFCTLog(strings.NewReader(""), 3); err != nil || len(got) != 0 {
		t.Fatalf("empty log = %v, %v; want no epochs", got, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func FuzzDecodeFCTLog(f *testing.F) {
	f.Add(sampleLog(f, 3, 2, true), uint8(2))
	f.Add(sampleLog(f, 2, 3, false), uint8(3))
	f.Add([]byte(`{"epoch": 0, "version": 0, "flow": 0, "fct": 1e-3}`), uint8(1))
	f.Add([]byte("{\"epoch\": 0,\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		flows := int(n%8) + 1
		eps, err := ReadFCTLog(bytes.NewReader(data), flows)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		var b bytes.Buffer
		for i, e := range eps {
			if i > 0 && e.Epoch <= eps[i-1].Epoch {
				t.Fatalf("epochs %d then %d", eps[i-1].Epoch, e.Epoch)
			}
			if len(e.FCT) != flows {
				t.Fatalf("epoch %d: %d FCTs, want %d", e.Epoch, len(e.FCT), flows)
			}
			for fl, v := range e.FCT {
				if !positiveFinite(v) {
					t.Fatalf("epoch %d flow %d: fct %v", e.Epoch, fl, v)
				}
				if err := EncodeFCTRecord(&b, FCTRecord{Epoch: e.Epoch, Version: e.Version, Flow: fl, Bytes: e.Bytes[fl], FCT: v}); err != nil {
					t.Fatal(err)
				}
			}
			if e.Elapsed != 0 {
				if err := EncodeFCTRecord(&b, FCTRecord{Epoch: e.Epoch, Version: e.Version, Flow: EpochRecord, Elapsed: e.Elapsed}); err != nil {
					t.Fatal(err)
				}
			}
		}
		again, err := ReadFCTLog(&b, flows)
		if err != nil {
			t.Fatalf("re-reading the encoding: %v", err)
		}
		if len(eps) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(eps, again) {
			t.Fatalf("round trip differs:\n%+v\n%+v", eps, again)
		}
	})
}

func BenchmarkReadFCTLog(b *testing.B) {
	data := sampleLog(b, 100, 64, true)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadFCTLog(bytes.NewReader(data), 64); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReadFCTLogFlows(t *testing.T) {
	rec := func(e, f, c, s, src, dst int) string {
		return fmt.Sprintf(`{"epoch": %d, "version": 0, "flow": %d, "chunk": %d, "step": %d, "src": %d, "dst": %d, "bytes": 8, "arrival": 0.1}`, e, f, c, s, src, dst)
	}
	entry := `{"epoch": 2, "version": 0, "elapsed": 0.5, "entry": [1, 2, 3]}`
	for _, tc := range []struct {
		name, log string
		want      []FlowEnds
		ranks     int
		err       string
	}{
		{"first epoch only", strings.Join([]string{rec(2, 1, 0, 1, 2, 0), rec(2, 0, 0, 0, 1, 2), entry, rec(3, 0, 5, 5, 5, 5)}, "\n"),
			[]FlowEnds{{0, 0, 1, 2}, {0, 1, 2, 0}}, 3, ""},
		{"no entries", rec(0, 0, 1, 2, 3, 4), []FlowEnds{{1, 2, 3, 4}}, 0, ""},
		{"no endpoints", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1}`, nil, 0, "line 1: epoch 0 flow 0: no chunk, step, src and dst"},
		{"a flow missing", rec(0, 1, 0, 0, 0, 1), nil, 0, "flow 0 of 2 is missing"},
		{"duplicate", rec(0, 0, 0, 0, 0, 1) + "\n" + rec(0, 0, 0, 0, 0, 1), nil, 0, "line 2: epoch 0: duplicate flow 0"},
		{"empty", "", nil, 0, "no flow records"},
		{"not json", "{", nil, 0, "line 1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ranks, err := ReadFCTLogFlows(strings.NewReader(tc.log))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) || ranks != tc.ranks {
				t.Fatalf("got %+v, %d ranks, %v; want %+v, %d", got, ranks, err, tc.want, tc.ranks)
			}
		})
	}
}

func FuzzReadFCTLogFlows(f *testing.F) {
	f.Add([]byte(`{"epoch": 0, "version": 0, "flow": 1, "chunk": 0, "step": 1, "src": 2, "dst": 0, "fct": 1}`))
	f.Add(sampleLog(f, 2, 3, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, ranks, err := ReadFCTLogFlows(bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "wire: fct log: ") {
				t.Fatalf("error without its prefix: %v", err)
			}
			return
		}
		if len(flows) == 0 || len(flows) > maxLoggedFlows || ranks < 0 {
			t.Fatalf("%d flows, %d ranks without an error", len(flows), ranks)
		}
	})
}
