package wire

import (
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/plan"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/vmihailenco/msgpack/v5"
)

// The encoded plan holds every field of every message, as docs/abi.md
// and python/react_torch/pattern.py read them.
func TestEncodePlan(t *testing.T) {
	p, err := pattern.Generate(ten.AllReduce, "tree", 4, -1)
	if err != nil {
		t.Fatal(err)
	}
	ly, _ := semantics.NewLayout(p)
	pl, err := plan.New(p, ly, critpath.New(p), 1, 1003, 4, 1024)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodePlan(pl)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"format": PlanFormat, "rank": 1, "numel": 1003, "need": pl.Need,
		"tag_steps": plan.TagSteps, "max_segments": plan.MaxSegments} {
		if fmt.Sprint(m[k]) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if fmt.Sprint(m["peers"]) != fmt.Sprint(pl.Peers) {
		t.Errorf("peers %v, want %v", m["peers"], pl.Peers)
	}
	flat := func(rs []plan.Range) string {
		var v []int64
		for _, r := range rs {
			v = append(v, r.Lo, r.Hi)
		}
		return fmt.Sprint(v)
	}
	common := func(got map[string]any, w *plan.Message) {
		t.Helper()
		kinds := make([]int, len(w.Kinds))
		for i, k := range w.Kinds {
			kinds[i] = int(k)
		}
		for k, want := range map[string]string{"step": fmt.Sprint(w.Step), "src": fmt.Sprint(w.Src), "dst": fmt.Sprint(w.Dst),
			"tag": fmt.Sprint(w.Tag), "size": fmt.Sprint(w.Size), "flows": fmt.Sprint(w.Flows), "ranges": flat(w.Ranges),
			"kinds": fmt.Sprint(kinds), "segs": flat(w.Segs)} {
			if g := fmt.Sprint(got[k]); g != want {
				t.Errorf("message %s = %s, want %s", k, g, want)
			}
		}
	}
	sends, recvs := m["sends"].([]any), m["recvs"].([]any)
	if len(sends) != len(pl.Sends) || len(recvs) != len(pl.Recvs) || len(sends) == 0 || len(recvs) == 0 {
		t.Fatalf("%d sends, %d receives, want %d, %d", len(sends), len(recvs), len(pl.Sends), len(pl.Recvs))
	}
	for i, x := range sends {
		got, w := x.(map[string]any), &pl.Sends[i]
		common(got, &w.Message)
		if fmt.Sprint(got["deps"]) != fmt.Sprint(w.Deps) || fmt.Sprint(got["aligned"]) != fmt.Sprint(w.Aligned) || len(got) != 11 {
			t.Errorf("send %d: %v, want deps %v aligned %v", i, got, w.Deps, w.Aligned)
		}
	}
	for j, x := range recvs {
		got, w := x.(map[string]any), &pl.Recvs[j]
		common(got, &w.Message)
		if fmt.Sprint(got["after"], got["war"], got["direct"], got["offset"]) != fmt.Sprint(w.After, w.War, w.Direct, w.Offset) || len(got) != 13 {
			t.Errorf("recv %d: %v, want after %d war %v direct %v offset %d", j, got, w.After, w.War, w.Direct, w.Offset)
		}
	}
}
