package leader

// The leader's intake as text scripts (testdata/*.txt), in the manner of
// etcd-io/raft; `go test ./internal/leader -rewrite` rewrites the
// expected output after a deliberate change.
//
//	key id=0 algo=ring ranks=4 [version=0] [log]
//	    adds key id (an allreduce of 4 MB on the generated pattern), whose
//	    epochs ran version so far; log: an FCT log in memory.
//	epochs id=0 from=0 to=12 [version=V] [slow=R] [missing=E,E] [noentry=E,E] [noelapsed]
//	    queues the records of epochs [from, to) of key id, version V
//	    (default: the last the key switched to), for the next exchange:
//	    arrivals of fixture FCTs (flows into rank R 4x slower) on a dataflow,
//	    every rank entering at 0; missing: one flow of those epochs has no
//	    value; noentry: one rank's entry is missing.
//	exchange
//	    sends the queued records as one exchange; prints each decision.
//	reset id=0
//	report x=3
//	    prints each key the report names, its version in force (the
//	    group's) and the first line of its text.
//	log id=0
//	    prints the key's FCT log as epochs: version, flows, elapsed, entry.
//	raw layout=1,0,1,5,0 values=3
//	    an exchange given as it is: a layout and a count of values (1.0 each).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
)

const testBytes = 4 << 20

type memLog struct{ bytes.Buffer }

func (*memLog) Close() error { return nil }

type script struct {
	l        *Leader
	patterns map[int]map[int]*ten.Pattern // key -> version -> pattern
	current  map[int]int                  // key -> version last switched to
	logs     map[int]*memLog
	layout   []int64
	items    int
	values   []float64
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{l: New(nil, nil), patterns: map[int]map[int]*ten.Pattern{}, current: map[int]int{}, logs: map[int]*memLog{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.exec(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (s *script) exec(d *datadriven.TestData) (string, error) {
	args := fixture.ArgsOf(d)
	num := args.Int
	id := num("id", 0)
	switch d.Cmd {
	case "key":
		p, err := pattern.Generate(ten.AllReduce, args["algo"], num("ranks", 4), -1)
		if err != nil {
			return "", err
		}
		v := num("version", 0)
		k := Key{Name: []byte(fmt.Sprintf(`["allreduce","float32",%d,-1]`, testBytes/4)), Label: fmt.Sprintf("key %d", id),
			MessageBytes: testBytes, Config: tuner.DefaultConfig()}
		if args.Has("log") {
			s.logs[id] = &memLog{}
			k.Log = s.logs[id]
		}
		if err := s.l.AddKey(id, k, v, p); err != nil {
			return "", err
		}
		s.patterns[id] = map[int]*ten.Pattern{v: p}
		s.current[id] = v
		return "ok\n", nil
	case "epochs":
		v := num("version", s.current[id])
		p := s.patterns[id][v]
		if p == nil {
			return "", fmt.Errorf("key %d has no version %d", id, v)
		}
		from, to := num("from", 0), num("to", 0)
		var factor fixture.Factor
		if r := num("slow", -1); r >= 0 {
			factor = fixture.Into(int32(r), 4)
		}
		dag := critpath.New(p)
		arrival := make([]float64, len(p.Flows))
		dag.Finish(fixture.FCTs(p, testBytes, factor), arrival)
		s.layout = append(s.layout, int64(id), int64(to-from))
		s.items++
		for e := from; e < to; e++ {
			s.layout = append(s.layout, int64(e), int64(v))
			row := make([]float64, wire.ExchangeRowLen(len(p.Flows), p.Ranks))
			copy(row, arrival)
			row[len(p.Flows)] = slices.Max(arrival)
			if _, ok := args["noelapsed"]; ok {
				row[len(p.Flows)] = math.NaN()
			}
			if slices.Contains(args.Ints("missing"), e) {
				row[1] = math.NaN()
			}
			if slices.Contains(args.Ints("noentry"), e) {
				row[len(row)-1] = math.NaN()
			}
			s.values = append(s.values, row...)
		}
		return "ok\n", nil
	case "exchange":
		layout := append([]int64{int64(s.items)}, s.layout...)
		s.layout, s.items = nil, 0
		values := s.values
		s.values = nil
		if err := s.l.Exchange(layout, values); err != nil {
			return "", err
		}
		return s.decisions()
	case "raw":
		var layout []int64
		for _, v := range args.Ints("layout") {
			layout = append(layout, int64(v))
		}
		values := make([]float64, num("values", 0))
		for i := range values {
			values[i] = 1
		}
		if err := s.l.Exchange(layout, values); err != nil {
			return "", err
		}
		return s.decisions()
	case "reset":
		if err := s.l.Reset(id); err != nil {
			return "", err
		}
		return "ok\n", nil
	case "report":
		b, err := s.l.Report(num("x", 0))
		if err != nil {
			return "", err
		}
		var r struct {
			Exchange int
			Keys     []struct {
				Key    []any
				Report struct{ Version int }
				Text   string
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return "", fmt.Errorf("%v: %s", err, b)
		}
		out := fmt.Sprintf("exchange %d\n", r.Exchange)
		for _, k := range r.Keys {
			first, _, _ := strings.Cut(k.Text, "\n")
			out += fmt.Sprintf("key %v version %d\n%s\n", k.Key, k.Report.Version, first)
		}
		return out, nil
	case "log":
		lg := s.logs[id]
		epochs, err := wire.ReadFCTLog(bytes.NewReader(lg.Bytes()), len(s.patterns[id][s.current[id]].Flows))
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, e := range epochs {
			fmt.Fprintf(&b, "epoch %d version %d arrival %v elapsed %v entry %d\n", e.Epoch, e.Version, e.Arrival, e.Elapsed > 0, len(e.Entry))
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// decisions prints the leader's decisions and takes their patterns.
func (s *script) decisions() (string, error) {
	var b strings.Builder
	for _, dec := range s.l.Decisions() {
		p, err := wire.DecodeMsgpack(dec.Pattern)
		if err != nil {
			return "", err
		}
		s.patterns[dec.Key][dec.Version] = p
		s.current[dec.Key] = dec.Version
		fmt.Fprintf(&b, "key %d: version %d from epoch %d (%d flows)\n", dec.Key, dec.Version, dec.Effective, len(p.Flows))
	}
	if b.Len() == 0 {
		return "no decision\n", nil
	}
	return b.String(), nil
}

func TestReportsNameHosts(t *testing.T) {
	for _, tc := range []struct {
		hosts [][]int
		want  []string
	}{
		{nil, nil},
		{[][]int{{0, 1}, {2}}, []string{"host 0 (ranks 0, 1)", "host 1 (rank 2)"}},
	} {
		node := New(nil, tc.hosts).node()
		if (node == nil) != (tc.want == nil) {
			t.Fatalf("hosts %v: node given %v", tc.hosts, node != nil)
		}
		for h, w := range tc.want {
			if got := node(h); got != w {
				t.Errorf("hosts %v: node(%d) = %q, want %q", tc.hosts, h, got, w)
			}
		}
	}
}

func TestLogPath(t *testing.T) {
	tests := []struct {
		name, want, err string
	}{
		{`["allreduce", "float32", 1024, -1]`, "/tmp/f.allreduce.float32.1024.jsonl", ""},
		{`["broadcast", "int64", 7, 2]`, "/tmp/f.broadcast.int64.7.root2.jsonl", ""},
		{`["reduce", "bfloat16", 0, 0]`, "/tmp/f.reduce.bfloat16.0.root0.jsonl", ""},
		{`["t"]`, "", `FCT log: key ["t"] is not [op, dtype, numel, root]`},
		{`null`, "", "is not [op, dtype, numel, root]"},
		{`["allreduce", "float32", 1.5, -1]`, "", "is not"},
		{`["", "float32", 4, -1]`, "", "is not"},
	}
	for _, tt := range tests {
		got, err := LogPath("/tmp/f", []byte(tt.name))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tt.name, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
