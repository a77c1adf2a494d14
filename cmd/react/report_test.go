package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/tuner"
)

// The report of a testbed or loaded-CPU log names the congested link
// first, a CPU-starved rank a slow host (and none where there is none),
// keeps what the tuner did, and says when its fit is not a network's
// alone.
func TestReportLogs(t *testing.T) {
	for _, tc := range []struct {
		log, pattern string
		stepped      bool
		first        tuner.LinkRef // the congested link; Rank -1: none significant expected first
		changes      int           // the changes the log's tuner makes
		slow         int           // the rank named a slow host; -1: none
	}{
		{"testbed-tree4-p2.jsonl", "pattern-allreduce-tree-4.json", true, tuner.LinkRef{Rank: 1, Dir: "down"}, 1, -1},
		{"testbed-tree8-p2.jsonl", "pattern-allreduce-tree-8.json", true, tuner.LinkRef{Rank: 1, Dir: "down"}, 1, -1},
		{"loaded-tree16-slow3.jsonl", "pattern-allreduce-tree-16.json", false, tuner.LinkRef{Rank: 3, Dir: "down"}, 1, -1},
		{"testbed-tree4-p0.jsonl", "pattern-allreduce-tree-4.json", true, tuner.LinkRef{Rank: -1}, 0, -1},
		{"loaded-tree16-none.jsonl", "pattern-allreduce-tree-16.json", false, tuner.LinkRef{Rank: -1}, 0, -1},
		// 4 CPU ranks, a thread spinning in rank 2's interpreter (its every
		// message waits for it), no congestion: a host, not its links. The
		// one change swaps rank 2 with rank 3, which sends and receives half
		// as many messages: a move that gains for a slow host too.
		{"starved-tree4-rank2.jsonl", "pattern-allreduce-tree-4.json", false, tuner.LinkRef{Rank: -1}, 1, 2},
	} {
		t.Run(tc.log, func(t *testing.T) {
			args := []string{"report", "--pattern", filepath.Join("testdata", tc.pattern), "--fcts", filepath.Join("testdata", tc.log), "--json"}
			if tc.stepped {
				args = append(args, "--Stepped")
			}
			code, stdout, stderr := runArgs(args, "")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var r tuner.Report
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("%v in %s", err, stdout)
			}
			if tc.first.Rank >= 0 && (len(r.Links) == 0 || r.Links[0].LinkRef != tc.first || !r.Links[0].Significant) {
				t.Errorf("first link %+v, want %+v, significant", r.Links, tc.first)
			}
			for i := 1; i < len(r.Links); i++ {
				if r.Links[i].Competing+r.Links[i].Slow > r.Links[i-1].Competing+r.Links[i-1].Slow {
					t.Errorf("links out of order: %+v", r.Links)
				}
			}
			var slow []int
			for _, h := range r.SlowHosts {
				slow = append(slow, h.Rank)
			}
			if want := []int{tc.slow}; (tc.slow < 0 && len(slow) > 0) || (tc.slow >= 0 && fmt.Sprint(slow) != fmt.Sprint(want)) {
				t.Errorf("slow hosts %+v, want rank %d", r.SlowHosts, tc.slow)
			}
			for _, l := range r.Links {
				if l.Host != (l.Rank == tc.slow) {
					t.Errorf("%s marked as a slow host's load: %v, want %v", l.LinkRef, l.Host, l.Rank == tc.slow)
				}
			}
			if len(r.Changes) != tc.changes {
				t.Fatalf("%d changes, want %d: %+v", len(r.Changes), tc.changes, r.Changes)
			}
			for _, c := range r.Changes {
				if len(c.Swaps) == 0 || c.Predicted <= 1 || c.To != c.From+1 || c.Effective <= c.Epoch {
					t.Errorf("change %+v", c)
				}
			}
			if !r.Misfit {
				t.Errorf("a fit %.2f off not flagged as a misfit", r.RMS)
			}
			if r.Time == nil || r.Time.Mean <= 0 || r.Time.P95 < r.Time.Mean*0.5 {
				t.Errorf("collective time %+v", r.Time)
			}
		})
	}
}

func TestReportText(t *testing.T) {
	code, stdout, stderr := runArgs([]string{"report", "--pattern", filepath.Join("testdata", "pattern-allreduce-tree-4.json"),
		"--fcts", filepath.Join("testdata", "testbed-tree4-p2.jsonl"), "--Stepped"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "report-tree4-p2.golden", stdout)
}

func TestReportPlot(t *testing.T) {
	dir := t.TempDir()
	out, base := filepath.Join(dir, "r.png"), filepath.Join(dir, "static.json")
	if err := os.WriteFile(base, []byte("[0.07, 0.065, 0.071]"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runArgs([]string{"report", "--pattern", filepath.Join("testdata", "pattern-allreduce-tree-16.json"),
		"--fcts", filepath.Join("testdata", "loaded-tree16-slow3.jsonl"), "--plot", out, "--baseline", base}, "")
	if code != 0 || !strings.Contains(stderr, "wrote "+out) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10000 {
		t.Errorf("%s: %d bytes, not a PNG picture", out, len(b))
	}
}

func TestReportErrors(t *testing.T) {
	pat := filepath.Join("testdata", "pattern-allreduce-tree-4.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--fcts", "-"}, "missing --pattern"},
		{[]string{"report", "--fcts", "nope.jsonl"}, "no such file"},
		{[]string{"report", "--pattern", pat}, "missing --fcts"},
		{[]string{"report", "--pattern", pat, "--fcts", "-"}, "stdin: no epochs"},
		{[]string{"report", "--pattern", pat, "--fcts", filepath.Join("testdata", "testbed-tree8-p2.jsonl")}, "flow"},
		{[]string{"report", "--pattern", pat, "--fcts", "-", "--B", "0"}, "B"},
		{[]string{"report", "--pattern", pat, "--fcts", filepath.Join("testdata", "testbed-tree4-p2.jsonl"), "--baseline", "x.json"}, "give both"},
	} {
		code, _, stderr := runArgs(tc.args, "")
		if code != exitUsage || !strings.Contains(stderr, "react report: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want usage naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Without --pattern the log's first epoch finds it: the report is the
// same as with it; endpoints that fit no pattern (of the op the log's
// name gives) are refused with what to give.
func TestReportFindsThePattern(t *testing.T) {
	for _, tc := range []struct{ log, pattern string }{
		{"testbed-tree4-p2.jsonl", "pattern-allreduce-tree-4.json"},
		{"loaded-tree16-slow3.jsonl", "pattern-allreduce-tree-16.json"},
	} {
		with := []string{"report", "--fcts", filepath.Join("testdata", tc.log), "--pattern", filepath.Join("testdata", tc.pattern)}
		code, want, stderr := runArgs(with, "")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.log, code, stderr)
		}
		code, got, stderr := runArgs(with[:3], "")
		if code != 0 || got != want {
			t.Errorf("%s without --pattern: exit %d %s\n%s\nwant\n%s", tc.log, code, stderr, got, want)
		}
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// a 2-rank ring AllGather: chunk 0 from rank 0, chunk 1 from rank 1
	// (a ring ReduceScatter sends each chunk the other way)
	var ring strings.Builder
	for f, e := range [][4]int{{0, 1, 0, 1}, {1, 1, 1, 0}} {
		fmt.Fprintf(&ring, `{"epoch": 0, "version": 0, "flow": %d, "chunk": %d, "step": %d, "src": %d, "dst": %d, "bytes": 4, "fct": 0.01}`+"\n", f, e[0], e[1], e[2], e[3])
	}
	for _, tc := range []struct{ name, text, want string }{
		{"odd.jsonl", `{"epoch": 0, "version": 0, "flow": 0, "chunk": 0, "step": 9, "src": 0, "dst": 1, "fct": 0.01}` + "\n", "no built-in pattern of 2 ranks has the logged flows; give --pattern"},
		{"ring.jsonl", ring.String(), ""},
		{"x.reducescatter.float32.2.jsonl", ring.String(), "no built-in pattern of 2 ranks"},
	} {
		code, _, stderr := runArgs([]string{"report", "--fcts", write(tc.name, tc.text)}, "")
		if tc.want == "" { // an AllGather's flows, found without the name's op
			if code != 0 {
				t.Errorf("%s: exit %d: %s", tc.name, code, stderr)
			}
			continue
		}
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q, want %q", tc.name, code, stderr, tc.want)
		}
	}
}
