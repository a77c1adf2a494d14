package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
)

// writeReplayInputs writes p and an FCT log of epochs epochs, all at version
// 0, in which flows into slow run factor times slower; it returns the paths.
func writeReplayInputs(t *testing.T, p *ten.Pattern, epochs, slow int, factor float64, elapsed bool) (patPath, logPath string) {
	t.Helper()
	dir := t.TempDir()
	var pb bytes.Buffer
	if err := wire.EncodeJSON(&pb, p); err != nil {
		t.Fatal(err)
	}
	patPath = filepath.Join(dir, "pattern.json")
	if err := os.WriteFile(patPath, pb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const msg, bw = 1 << 20, 10e9
	var lb bytes.Buffer
	for e := range epochs {
		for i, f := range p.Flows {
			b := msg * f.Fraction
			fct := b / bw
			if int(f.Dst) == slow {
				fct *= factor
			}
			fct *= 1 + 0.01*float64((e*7+i*3)%5) // small deterministic jitter
			r := wire.FCTRecord{Epoch: e, Flow: i, Chunk: int(f.Chunk), Step: int(f.Step), Src: int(f.Src), Dst: int(f.Dst), Bytes: b, FCT: fct}
			if err := wire.EncodeFCTRecord(&lb, r); err != nil {
				t.Fatal(err)
			}
		}
		if elapsed {
			if err := wire.EncodeFCTRecord(&lb, wire.FCTRecord{Epoch: e, Flow: wire.EpochRecord, Elapsed: 1e-3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logPath = filepath.Join(dir, "fcts.jsonl")
	if err := os.WriteFile(logPath, lb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return patPath, logPath
}

func TestReplayFindsSlowRank(t *testing.T) {
	pat, log := writeReplayInputs(t, pattern.TreeAllReduce(8), 30, 3, 3, false)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			code, stdout, stderr := runArgs([]string{"replay", "--pattern", pat, "--fcts", log, "--format", format}, "")
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			var trial, emitted string
			if format == "text" {
				trial, emitted = "  trial ", "  -> version 1 from epoch "
			} else {
				trial, emitted = `"trials":[{"swap"`, `"new_version":1`
			}
			if !strings.Contains(stdout, trial) || !strings.Contains(stdout, emitted) {
				t.Fatalf("no decision with a trial and an emitted pattern:\n%s", stdout)
			}
			// the log ran version 0 throughout: the switch waits for it
			if !strings.Contains(stdout, "never ran: the log ends at epoch 29 on version 0") && !strings.Contains(stdout, `"never_ran":1`) {
				t.Fatalf("replay did not report the switch the log never ran:\n%s", stdout)
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	pat, log := writeReplayInputs(t, pattern.TreeAllReduce(4), 2, 1, 2, false)
	good, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	dir := t.TempDir()
	bad := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	noBytes := bad("nobytes.jsonl", `{"epoch": 0, "version": 0, "flow": 0, "fct": 1e-4}`+"\n"+strings.Join(lines[1:12], ""))
	tests := []struct {
		name   string
		args   []string
		stdin  string
		stderr string
	}{
		{"missing pattern", []string{"--fcts", "-"}, "", "missing --pattern (a log on stdin"},
		{"missing fcts", []string{"--pattern", pat}, "", "missing --fcts"},
		{"bad format", []string{"--pattern", pat, "--fcts", log, "--format", "xml"}, "", `unknown --format "xml"`},
		{"bad config", []string{"--pattern", pat, "--fcts", log, "--B", "0"}, "", "B = 0"},
		{"H below B", []string{"--pattern", pat, "--fcts", log, "--B", "8", "--H", "4"}, "", "H = 4"},
		{"setting of the wrong type", []string{"--pattern", pat, "--fcts", log, "--Lag", "soon"}, "", `invalid value "soon" for flag -Lag: tuner config: Lag = soon, want an integer`},
		{"stray argument", []string{"--pattern", pat, "--fcts", log, "x"}, "", `unexpected argument "x"`},
		{"no such log", []string{"--pattern", pat, "--fcts", filepath.Join(dir, "nope")}, "", "no such file"},
		{"malformed json", []string{"--pattern", pat, "--fcts", bad("json.jsonl", lines[0]+"{\"epoch\": 0,\n")}, "", "line 2: malformed JSON"},
		{"flow out of range", []string{"--pattern", pat, "--fcts", bad("range.jsonl", strings.Replace(lines[0], `"flow": 0`, `"flow": 12`, 1))}, "", "line 1: epoch 0: flow 12 out of range [0, 12)"},
		{"duplicate flow", []string{"--pattern", pat, "--fcts", bad("dup.jsonl", lines[0]+lines[0])}, "", "line 2: epoch 0: duplicate flow 0"},
		{"missing flows", []string{"--pattern", pat, "--fcts", "-"}, strings.Join(lines[:5], "") + lines[12], "stdin: wire: fct log: line 6: epoch 0 (from line 1) has 5 of 12 flows"},
		{"bad fct", []string{"--pattern", pat, "--fcts", bad("fct.jsonl", `{"epoch": 0, "version": 0, "flow": 0, "fct": -1}`+"\n")}, "", "line 1: epoch 0 flow 0: fct -1"},
		{"out of order", []string{"--pattern", pat, "--fcts", "-"}, strings.Join(lines[12:24], "") + lines[0], "line 13: epoch 0 after epoch 1"},
		{"empty log", []string{"--pattern", pat, "--fcts", "-"}, "", "stdin: no epochs"},
		{"no bytes", []string{"--pattern", pat, "--fcts", noBytes}, "", "give --bytes"},
		{"bad pattern", []string{"--pattern", log, "--fcts", log}, "", "wire: json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runArgs(append([]string{"replay"}, tt.args...), tt.stdin)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr:\n%s\nwant 2 and %q", code, stderr, tt.stderr)
			}
		})
	}
	if code, _, stderr := runArgs([]string{"replay", "--pattern", pat, "--fcts", noBytes, "--bytes", "1048576"}, ""); code != 0 {
		t.Fatalf("--bytes given: exit %d, stderr:\n%s", code, stderr)
	}
	if code, stdout, _ := runArgs([]string{"replay", "-h"}, ""); code != 0 || !strings.Contains(stdout, "-KtGrowth") {
		t.Fatalf("replay -h: exit %d, stdout:\n%s", code, stdout)
	}
}

func TestGoldenReplay(t *testing.T) {
	tests := []struct {
		name    string
		p       *ten.Pattern
		epochs  int
		slow    int // -1: none
		elapsed bool
		args    []string
	}{
		{"replay-tree4.golden", pattern.TreeAllReduce(4), 12, 1, false, []string{"--B", "3", "--H", "6", "--Lag", "2"}},
		{"replay-tree8.golden", pattern.TreeAllReduce(8), 20, 1, false, []string{"--B", "4", "--Lag", "2", "--Kt", "4"}},
		{"replay-tree4-elapsed.golden", pattern.TreeAllReduce(4), 9, 1, true, []string{"--B", "3", "--H", "6"}},
		{"replay-ring4-uniform.golden", pattern.RingAllReduce(4), 9, -1, false, []string{"--B", "3", "--H", "6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pat, log := writeReplayInputs(t, tt.p, tt.epochs, tt.slow, 3, tt.elapsed)
			code, stdout, stderr := runArgs(append([]string{"replay", "--pattern", pat, "--fcts", log}, tt.args...), "")
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			golden(t, tt.name, stdout)
		})
	}
}

// Logs of the namespace testbed (2 MiB, 200 Mbit/s links, 2 cores;
// testbed/testbed.py run or table): with no congestion the FCTs fit the
// link model only to about 20%, and the tuner must propose nothing; with
// rank 1's downlink shared with two external flows it must move flows away
// from rank 1 in its first batch, though the model, 20-25% off, predicts
// more than the collective takes (it waited 4 batches when that was held
// against it).
//
// Logs of 16 CPU ranks on 2 cores that three busy loops also ran on
// (tests/python's 16-rank switch worker, 32 KiB, the dataflow executor):
// the fit misses its flows by 0.8 (log) and, with REACT_TEST_SLOW_RANK=3
// (every message into rank 3 20 ms late), by 2.3. Without the slow rank the
// tuner must propose nothing; with it, it must move flows off rank 3 once
// its model finds the rank (batch 3), which the uncapped misfit rule
// (asking 2.2x of a change predicted at 1.9x) never allowed.
func TestReplayTestbedLogs(t *testing.T) {
	for _, tc := range []struct {
		log, pattern, bytes string
		ranks               int
		change              bool
		swaps               int   // the most swaps the change may make; 0: any
		slow                int32 // the congested rank
		by                  int   // the batch the change must come in by
		stepped             bool
	}{
		{"testbed-tree4-p0.jsonl", "pattern-allreduce-tree-4.json", "2097152", 4, false, 0, 1, 0, true},
		{"testbed-tree4-p2.jsonl", "pattern-allreduce-tree-4.json", "2097152", 4, true, 0, 1, 0, true},
		{"testbed-tree8-p2.jsonl", "pattern-allreduce-tree-8.json", "2097152", 8, true, 0, 1, 0, true},
		// 4 hosts x 2 ranks, a 1 MiB shard a rail, the fit 30% off: the
		// climb added swaps of 2% and 17% to one of 17%, the three gained
		// less than that one alone, and a noisy batch reverted them
		{"testbed-hier4x2-p2.jsonl", "pattern-allreduce-tree-4.json", "1048576", 4, true, 1, 1, 0, true},
		{"loaded-tree16-none.jsonl", "pattern-allreduce-tree-16.json", "32768", 16, false, 0, 3, 0, false},
		{"loaded-tree16-slow3.jsonl", "pattern-allreduce-tree-16.json", "32768", 16, true, 0, 3, 3, false},
	} {
		args := []string{"replay", "--pattern", filepath.Join("testdata", tc.pattern),
			"--fcts", filepath.Join("testdata", tc.log), "--bytes", tc.bytes, "--format", "json"}
		if tc.stepped {
			args = append(args, "--Stepped")
		}
		code, stdout, stderr := runArgs(args, "")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", tc.log, code, stderr)
		}
		var changed *jsonDecision
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var d jsonDecision
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("%s: %v in %q", tc.log, err, line)
			}
			if len(d.Pattern) > 0 && changed == nil {
				changed = &d
			}
		}
		if !tc.change {
			if changed != nil {
				t.Errorf("%s: batch %d changed the pattern without congestion (trials %v)", tc.log, changed.Batch, changed.Trials)
			}
			continue
		}
		if changed == nil || changed.Batch > tc.by {
			t.Fatalf("%s: want a change by batch %d, got %+v", tc.log, tc.by, changed)
		}
		if tc.swaps > 0 && len(changed.Trials) > tc.swaps {
			t.Errorf("%s: a change of %d swaps, want at most %d: %v", tc.log, len(changed.Trials), tc.swaps, changed.Trials)
		}
		var after struct {
			Flows []struct {
				Dst int32 `json:"dst"`
			} `json:"flows"`
		}
		if err := json.Unmarshal(changed.Pattern, &after); err != nil {
			t.Fatal(err)
		}
		n0, n := 0, 0
		for _, f := range pattern.TreeAllReduce(tc.ranks).Flows {
			if f.Dst == tc.slow {
				n0++
			}
		}
		for _, f := range after.Flows {
			if f.Dst == tc.slow {
				n++
			}
		}
		if n >= n0 {
			t.Errorf("%s: %d flows into the congested rank %d after the change, %d before", tc.log, n, tc.slow, n0)
		}
	}
}
