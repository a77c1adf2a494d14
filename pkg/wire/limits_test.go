package wire_test

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// allocated is the number of bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// allocBound is what a decoder (and the checker after it) may allocate for
// n bytes of input: a small multiple of the input (a flow is 25 bytes on
// the wire, 32 in memory) plus the checker's N x N bits at ten.MaxRanks.
func allocBound(n int) uint64 {
	return 64*uint64(n) + 3*ten.MaxRanks*ten.MaxRanks/4 + 64<<10
}

// lying re-encodes a small valid pattern with header fields replaced: what
// a corrupt reply from the leader could look like.
func lying(t testing.TB, edit func(m map[string]any)) []byte {
	p, err := pattern.Generate(ten.AllReduce, "tree", 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeMsgpack(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// claimFlows claims n flows in the header and in every column's shape,
// keeping the small data (issue 15's was a 337-byte pattern).
func claimFlows(n int64) func(map[string]any) {
	return func(m map[string]any) {
		m["nflows"] = n
		for _, c := range m["flows"].(map[string]any) {
			c.(map[string]any)["shape"] = []int64{n}
		}
	}
}

// hugeClaims are inputs whose sizes lie: each claims far more than its bytes hold.
func hugeClaims(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"2^31-1 flows":        lying(t, claimFlows(math.MaxInt32)),
		"2^20 ranks":          lying(t, func(m map[string]any) { m["ranks"] = 1 << 20 }),
		"MaxRanks+1 ranks":    lying(t, func(m map[string]any) { m["ranks"] = ten.MaxRanks + 1 }),
		"step 2^31-1":         lying(t, func(m map[string]any) { stepZero(m, math.MaxInt32) }),
		"str of 4 GiB":        {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'},
		"unknown key, bin":    {0x81, 0xa1, 'x', 0xc6, 0xff, 0xff, 0xff, 0xf0},
		"unknown key, ext":    {0x81, 0xa1, 'x', 0xc9, 0xff, 0xff, 0xff, 0xf0, 0x01},
		"unknown key, array":  {0x81, 0xa1, 'x', 0xdd, 0xff, 0xff, 0xff, 0xff},
		"unknown key, map":    {0x81, 0xa1, 'x', 0xdf, 0xff, 0xff, 0xff, 0xff},
		"pattern map 2^32-1":  {0xdf, 0xff, 0xff, 0xff, 0xff},
		"algo str of 4 GiB":   append([]byte{0x81, 0xa4, 'a', 'l', 'g', 'o', 0xdb, 0xff, 0xff, 0xff, 0xff}, make([]byte, 64)...),
		"fct batch 2^31-1 sq": fctClaim(t),
	}
}

// stepZero sets the first flow's step to s.
func stepZero(m map[string]any, s uint32) {
	c := m["flows"].(map[string]any)["step"].(map[string]any)
	d := append([]byte(nil), c["data"].([]byte)...)
	d[0], d[1], d[2], d[3] = byte(s), byte(s>>8), byte(s>>16), byte(s>>24)
	c["data"] = d
}

// fctClaim is an FCT batch claiming 2^31-1 epochs of 2^31-1 flows.
func fctClaim(t testing.TB) []byte {
	b, err := wire.EncodeFCTBatch(smallBatch())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["epochs"], m["nflows"] = math.MaxInt32, math.MaxInt32
	m["fct"].(map[string]any)["shape"] = []int64{math.MaxInt32, math.MaxInt32}
	m["elapsed"].(map[string]any)["shape"] = []int64{math.MaxInt32}
	out, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeAndCheck is what libreact does with a pattern it is handed.
func decodeAndCheck(data []byte) error {
	p, err := wire.DecodeMsgpack(data)
	if err != nil {
		return err
	}
	return semantics.Check(p)
}

// TestHugeClaimsBoundedAllocation: every decoder refuses an input whose
// sizes lie, allocating no more than a small multiple of its bytes (before
// the fix, the 2^31-1-flow pattern allocated 64 GiB and the 2^20-rank one
// made the checker allocate 256 GiB: the process died).
func TestHugeClaimsBoundedAllocation(t *testing.T) {
	for name, data := range hugeClaims(t) {
		var err, jerr, berr error
		got := allocated(func() {
			err = decodeAndCheck(data)
			_, berr = wire.DecodeFCTBatch(data)
			_, jerr = wire.DecodeJSON(data)
		})
		if err == nil && berr == nil {
			t.Errorf("%s: accepted", name)
		}
		_ = jerr // not JSON: refused, but it must not allocate either
		if got > allocBound(len(data)) {
			t.Errorf("%s (%d bytes): decoding allocated %d bytes, more than %d", name, len(data), got, allocBound(len(data)))
		}
	}
	data := hugeClaims(t)["2^31-1 flows"]
	if err := decodeAndCheck(data); err == nil || !strings.Contains(err.Error(), "data has") {
		t.Errorf("2^31-1 flows: %v, want the column length named", err)
	}
	for _, name := range []string{"2^20 ranks", "MaxRanks+1 ranks", "step 2^31-1"} {
		if err := decodeAndCheck(hugeClaims(t)[name]); !errors.Is(err, ten.ErrLimit) {
			t.Errorf("%s: %v, want ten.ErrLimit", name, err)
		}
	}
}

// TestCheckerMemoryBoundedByState: a step with many flows from few sources
// costs the checker one snapshot per source, not one per flow (it was 256
// bytes per flow at 1024 ranks: 100 MB for a 10 MB pattern).
func TestCheckerMemoryBoundedByState(t *testing.T) {
	const n, per = ten.MaxRanks, 400
	p := &ten.Pattern{Op: ten.AllReduce, Algo: "wide", Ranks: n, Root: -1}
	for i := 0; i < per*n; i++ {
		p.Flows = append(p.Flows, ten.Flow{Chunk: 0, Step: 1, Src: int32(1 + i%(n-1)), Dst: 0, Kind: ten.KindReduce, Fraction: 1})
	}
	enc, err := wire.EncodeMsgpack(p)
	if err != nil {
		t.Fatal(err)
	}
	var cerr error
	got := allocated(func() { cerr = decodeAndCheck(enc) })
	if cerr == nil {
		t.Fatal("a pattern that counts every rank 400 times passed the check")
	}
	if got > allocBound(len(enc)) {
		t.Errorf("decode and check of %d bytes allocated %d, more than %d", len(enc), got, allocBound(len(enc)))
	}
}

// fuzzBounded: whatever the input, decoding then checking allocates within
// allocBound and never panics.
func fuzzBounded(t *testing.T, data []byte) {
	got := allocated(func() {
		_ = decodeAndCheck(data)
		_, _ = wire.DecodeFCTBatch(data)
	})
	if got > allocBound(len(data)) {
		t.Fatalf("%d bytes of input: allocated %d, more than %d", len(data), got, allocBound(len(data)))
	}
}

func FuzzHugeClaims(f *testing.F) {
	for _, b := range hugeClaims(f) {
		f.Add(b)
	}
	fuzzSeeds(f, wire.EncodeMsgpack)
	f.Fuzz(fuzzBounded)
}
