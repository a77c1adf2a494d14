package driver

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
)

// A switch and its verdict each log one sentence at INFO that names the
// collective, the link blamed, the swaps, and the predicted and measured
// speed-ups.
func TestSummaryLogged(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	core, logs := observer.New(zapcore.InfoLevel)
	d.SetLogger(zap.New(core), "allreduce float32 x262144")
	if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
		t.Fatal(err)
	}
	dec, _, _ := d.Decision(1 << 20)
	q, err := wire.DecodeMsgpack(dec.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(batch(p, 6, 4, 0, 3)); err != nil {
		t.Fatal(err)
	}
	for e := 10; e < 40 && !hasVerdict(logs); e += 6 {
		if err := d.Submit(batch(q, e, 6, 1, 3)); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for _, l := range logs.All() {
		if strings.HasPrefix(l.Message, "allreduce float32 x262144 (1 MiB): ") {
			lines = append(lines, l.Message)
		}
	}
	t.Logf("%q", lines)
	if len(lines) != 2 {
		t.Fatalf("sentences %q, want a switch and its verdict", lines)
	}
	for _, want := range []string{"switching to version 1 at epoch 10 by ", "moving flows off rank 3's downlink (~", "; predicted "} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("switch %q lacks %q", lines[0], want)
		}
	}
	for _, want := range []string{"version 1 (from epoch 10, ", " measured ", " against version 0, predicted "} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("verdict %q lacks %q", lines[1], want)
		}
	}
}

func hasVerdict(logs *observer.ObservedLogs) bool {
	for _, l := range logs.All() {
		if strings.HasSuffix(l.Message, "; kept") || strings.Contains(l.Message, "; reverted") {
			return true
		}
	}
	return false
}

func TestSummary(t *testing.T) {
	change := tuner.Change{Batch: 3, Epoch: 25, Effective: 27, From: 0, To: 1, Swaps: []string{"chunk 1: 3<->2"}, Predicted: 1.91, Verdict: "pending"}
	judged := change
	judged.Measured, judged.Verdict = 0.93, "reverted"
	ring := tuner.LinkLoad{LinkRef: tuner.LinkRef{Rank: 2, Dir: "up"}, Competing: 2, SE: 0.1, Significant: true,
		AmbiguousWith: []tuner.LinkRef{{Rank: 3, Dir: "down"}}}
	for _, tc := range []struct {
		name  string
		label string
		r     tuner.Report
		dec   tuner.Decision
		want  string
	}{
		{"nothing", "x", tuner.Report{Op: "allreduce", Bytes: 64}, tuner.Decision{}, ""},
		{"ambiguous link", "", tuner.Report{Op: "allreduce", Algo: "ring", Bytes: 4 << 20, Links: []tuner.LinkLoad{ring}, Changes: []tuner.Change{change}},
			tuner.Decision{Pattern: &ten.Pattern{}, NewVersion: 1, Effective: 27},
			"allreduce ring (4 MiB): switching to version 1 at epoch 27 by chunk 1: 3<->2: moving flows off rank 2's uplink (~2.0 competing flows) or rank 3's downlink (the flows seen cannot tell them apart); predicted 1.91x"},
		{"slow host's link", "ar", tuner.Report{Bytes: 32 << 10, Links: []tuner.LinkLoad{{LinkRef: tuner.LinkRef{Rank: 2, Dir: "down"}, Competing: 37.3, SE: 2.9, Significant: true, Host: true}},
			Changes: []tuner.Change{change}},
			tuner.Decision{Pattern: &ten.Pattern{}, NewVersion: 1},
			"ar (32 KiB): switching to version 1 at epoch 27 by chunk 1: 3<->2: moving flows off rank 2's downlink (~37.3 competing flows, or rank 2 slow itself: the flows seen read it slow both ways); predicted 1.91x"},
		{"slow pair", "ag", tuner.Report{Bytes: 512, Pairs: []tuner.PairLoad{{Src: 0, Dst: 1, Factor: 0.8}, {Src: 4, Dst: 5, Factor: 1.6}}, Changes: []tuner.Change{change}},
			tuner.Decision{Pattern: &ten.Pattern{}, NewVersion: 1},
			"ag (512 B): switching to version 1 at epoch 27 by chunk 1: 3<->2: moving flows off the pair 4 -> 5 (1.60x the median pair's time); predicted 1.91x"},
		{"revert", "ar", tuner.Report{Bytes: 2048, Changes: []tuner.Change{judged}},
			tuner.Decision{Version: 1, Reverted: true, Pattern: &ten.Pattern{}, NewVersion: 2, Effective: 40},
			"ar (2 KiB): version 1 (from epoch 27, chunk 1: 3<->2) measured 0.93x against version 0, predicted 1.91x; reverted: version 0's pattern runs again as version 2 from epoch 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(tc.label, &tc.r, &tc.dec); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Report's bytes stay the same until the tuner takes another epoch (a
// caller sizing its buffer gets them again on its retry), then describe
// it; a closed driver refuses.
func TestReport(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d, q := decided(t, p)
	a, err := d.Report()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.Report()
	if &a[0] != &b[0] {
		t.Error("the report was made again without a new epoch")
	}
	var r tuner.Report
	if err := json.Unmarshal(a, &r); err != nil || r.Epoch != 5 || len(r.Changes) != 1 || !strings.Contains(string(a), "<->") {
		t.Fatalf("report %s: %v", a, err)
	}
	if err := d.Submit(batch(p, 6, 4, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(batch(q, 10, 6, 1, 3)); err != nil {
		t.Fatal(err)
	}
	c, _ := d.Report()
	if err := json.Unmarshal(c, &r); err != nil || r.Epoch != 15 || r.Version != 1 {
		t.Fatalf("report after epoch 15: %s: %v", c, err)
	}
	d.Close()
	if _, err := d.Report(); kind(err) != Closed {
		t.Fatalf("report after close: %v", err)
	}
}
