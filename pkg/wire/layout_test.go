package wire

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/vmihailenco/msgpack/v5"
)

// TestEncodeLayout reads the layout back with the generic decoder and
// compares every column with the semantics.Layout it came from.
func TestEncodeLayout(t *testing.T) {
	for _, tc := range []struct {
		op   ten.Op
		algo string
		n    int
	}{
		{ten.AllGather, "ring", 5},
		{ten.AllGather, "recursive_doubling", 6},
		{ten.ReduceScatter, "ring", 4},
		{ten.AllReduce, "tree", 7},
	} {
		p, err := pattern.Generate(tc.op, tc.algo, tc.n, -1)
		if err != nil {
			t.Fatal(err)
		}
		ly, err := semantics.NewLayout(p)
		if err != nil {
			t.Fatal(err)
		}
		dag := critpath.New(p)
		b, err := EncodeLayout(ly, dag, p.Ranks)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := msgpack.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["format"] != LayoutFormat {
			t.Errorf("%v/%s: format %v", tc.op, tc.algo, m["format"])
		}
		if got, want := fmt.Sprint(m["exchange_row"]), fmt.Sprint(len(p.Flows)+1+tc.n); got != want {
			t.Errorf("%v/%s: exchange_row %s, want %s", tc.op, tc.algo, got, want)
		}
		predStart, preds := []int32{0}, []int32{}
		for f := range p.Flows {
			preds = append(preds, dag.Preds(f)...)
			predStart = append(predStart, int32(len(preds)))
		}
		for name, want := range map[string][]int32{"start": ly.Start, "blocks": ly.Blocks, "owner": ly.Owner, "pred_start": predStart, "preds": preds} {
			col := m[name].(map[string]any)
			data := col["data"].([]byte)
			if col["dtype"] != "<i4" || len(data) != 4*len(want) {
				t.Fatalf("%v/%s %s: dtype %v, %d bytes for %d items", tc.op, tc.algo, name, col["dtype"], len(data), len(want))
			}
			for i, w := range want {
				if got := int32(binary.LittleEndian.Uint32(data[4*i:])); got != w {
					t.Fatalf("%v/%s %s[%d] = %d, want %d", tc.op, tc.algo, name, i, got, w)
				}
			}
		}
	}
}
