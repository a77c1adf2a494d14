package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
)

// settingFlag is the flag of one tuner setting, named by tuner.Config's
// JSON name, the spelling libreact, react_torch and scenario files use.
type settingFlag struct {
	cfg *tuner.Config
	st  tuner.Setting
}

func (f settingFlag) String() string {
	if f.cfg == nil || f.st.Default == false { // flag shows no default equal to a zero value's
		return ""
	}
	return fmt.Sprint(f.st.Default)
}

func (f settingFlag) Set(text string) error { return f.cfg.Set(f.st.Name, text) }

func (f settingFlag) IsBoolFlag() bool { return f.st.Type == "bool" }

// runReplay feeds a recorded FCT log through the tuner offline, so that its
// decisions can be inspected without a cluster.
func runReplay(e *env, args []string) int {
	fs := newFlagSet("react replay")
	in := replayFlags(fs)
	format := fs.String("format", "text", "output: text or json")
	const synopsis = "[--pattern P.json] --fcts LOG [--bytes N] [--format text|json] [--Setting value ...]"
	if code, done := parseFlags(e, fs, args, synopsis); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "react replay: "+format+"\n", a...)
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		return fail("unknown --format %q (want text or json)", *format)
	}
	run, err := in.read(e, fs)
	if err != nil {
		return fail("%v", err)
	}
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	line := func(text string, fields map[string]any) {
		if *format == "json" {
			writeJSONLine(out, fields)
		} else {
			fmt.Fprintln(out, text)
		}
	}
	_, err = run.drive(line, func(d *tuner.Decision) error {
		if *format == "json" {
			return writeDecisionJSON(out, d)
		}
		return writeDecisionText(out, d)
	})
	if err != nil {
		out.Flush()
		return fail("%v", err)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(e.stderr, "react replay: writing: %v\n", err)
		return exitFail
	}
	return exitOK
}

// replayInput holds the flags replay and report share.
type replayInput struct {
	pattern, fcts *string
	bytes         *float64
	cfg           *tuner.Config
}

func replayFlags(fs *flag.FlagSet) replayInput {
	in := replayInput{
		pattern: fs.String("pattern", "", "initial pattern, JSON (react pattern --format json); default: the built-in pattern whose flows the log's first epoch has"),
		fcts:    fs.String("fcts", "", "FCT log, JSON lines (see package wire); - reads stdin"),
		bytes:   fs.Float64("bytes", 0, "message size in bytes (default: the log's bytes of flow 0 over its fraction)"),
		cfg:     new(tuner.Config),
	}
	*in.cfg = tuner.DefaultConfig()
	for _, st := range tuner.Settings() {
		fs.Var(settingFlag{in.cfg, st}, st.Name, st.Help)
	}
	return in
}

// replayRun is a pattern, its FCT log and the tuner that replays it.
type replayRun struct {
	cfg     tuner.Config
	p       *ten.Pattern
	epochs  []wire.FCTEpoch
	bytes   float64
	logName string
	tu      *tuner.Tuner
}

// read checks the flags and reads the pattern and the log.
func (in replayInput) read(e *env, fs *flag.FlagSet) (*replayRun, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *in.fcts == "" {
		return nil, errors.New("missing --fcts")
	}
	if *in.pattern == "" && *in.fcts == "-" {
		return nil, errors.New("missing --pattern (a log on stdin is read once: the pattern cannot be found from it)")
	}
	cfg := *in.cfg
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var logR io.Reader
	logName := *in.fcts
	if logName == "-" {
		logR, logName = e.stdin, "stdin"
	} else {
		f, err := os.Open(logName)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		logR = f
	}
	var p *ten.Pattern
	if *in.pattern == "" {
		// the log's first epoch names the pattern's flows; read it twice
		data, err := io.ReadAll(logR)
		if err != nil {
			return nil, err
		}
		ends, ranks, err := wire.ReadFCTLogFlows(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w (give --pattern)", logName, err)
		}
		if p, err = findPattern(logName, ends, ranks); err != nil {
			return nil, err
		}
		logR = bytes.NewReader(data)
	} else {
		data, err := os.ReadFile(*in.pattern)
		if err != nil {
			return nil, err
		}
		if p, err = wire.DecodeJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", *in.pattern, err)
		}
		if err := semantics.Check(p); err != nil {
			return nil, fmt.Errorf("%s: %w", *in.pattern, err)
		}
	}
	epochs, err := wire.ReadFCTLog(bufio.NewReader(logR), len(p.Flows))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logName, err)
	}
	if len(epochs) == 0 {
		return nil, fmt.Errorf("%s: no epochs", logName)
	}
	msgBytes := *in.bytes
	if msgBytes == 0 {
		b0 := epochs[0].Bytes[0]
		if b0 == 0 {
			return nil, fmt.Errorf("%s: no bytes logged for flow 0 of epoch %d; give --bytes", logName, epochs[0].Epoch)
		}
		msgBytes = b0 / p.Flows[0].Fraction
	}
	tu, err := tuner.New(cfg, p, msgBytes)
	if err != nil {
		return nil, err
	}
	return &replayRun{cfg: cfg, p: p, epochs: epochs, bytes: msgBytes, logName: logName, tu: tu}, nil
}

// drive feeds the log to the tuner as the runtime ran it, epoch by epoch,
// and hands on every decision; line gets the notes on switches (text, and
// the same as JSON fields). It stops where the log leaves the tuner's
// pattern, and returns the epochs it observed.
func (r *replayRun) drive(line func(string, map[string]any), on func(*tuner.Decision) error) ([]wire.FCTEpoch, error) {
	var dag *critpath.DAG
	var dagOf *ten.Pattern
	due, dueAt, lastEpoch, lastVersion := -1, 0, 0, 0 // a switch decided and not yet run
	seen := 0
	for _, ep := range r.epochs {
		r.tu.Ran(ep.Epoch, ep.Version) // the runtime switched when the log says
		cur, v := r.tu.Pattern(ep.Epoch)
		if due >= 0 && v == due {
			if ep.Epoch != dueAt {
				line(fmt.Sprintf("  version %d ran from epoch %d (due from epoch %d)", v, ep.Epoch, dueAt),
					map[string]any{"ran": v, "epoch": ep.Epoch, "due": dueAt})
			}
			due = -1
		}
		lastEpoch, lastVersion = ep.Epoch, ep.Version
		if v != ep.Version {
			msg := fmt.Sprintf("epoch %d ran version %d in the log but version %d in the tuner; stopping, the log no longer describes the tuner's pattern", ep.Epoch, ep.Version, v)
			line(msg, map[string]any{"stop": msg, "epoch": ep.Epoch, "log_version": ep.Version, "tuner_version": v})
			break
		}
		fct := ep.FCT
		if ep.Entry != nil && len(ep.Entry) != cur.Ranks {
			return nil, fmt.Errorf("%s: epoch %d has entry times of %d ranks, the pattern has %d", r.logName, ep.Epoch, len(ep.Entry), cur.Ranks)
		}
		if ep.Arrival && len(fct) == len(cur.Flows) { // else Observe names the mismatch
			if dagOf != cur {
				dag, dagOf = critpath.New(cur), cur
			}
			fct = make([]float64, len(fct))
			dag.ReadArrivals(cur, r.cfg.ReadsStepped(), ep.FCT, ep.Entry, fct)
		}
		dec, err := r.tu.Observe(ep.Epoch, fct, ep.Elapsed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.logName, err)
		}
		seen++
		if dec == nil {
			continue
		}
		if dec.Pattern != nil {
			due, dueAt = dec.NewVersion, dec.Effective
		}
		if err := on(dec); err != nil {
			return nil, err
		}
	}
	if due >= 0 {
		line(fmt.Sprintf("version %d, due from epoch %d, never ran: the log ends at epoch %d on version %d", due, dueAt, lastEpoch, lastVersion),
			map[string]any{"never_ran": due, "due": dueAt, "last_epoch": lastEpoch, "log_version": lastVersion})
	}
	return r.epochs[:seen], nil
}

func micros(s float64) string { return fmt.Sprintf("%.3f µs", s*1e6) }

// counts lists the significant competing counts of a fit, e.g. " up[3]=2.0".
func counts(m *links.Fit) string {
	var b strings.Builder
	for r := range m.Net.Up {
		if links.Significant(m.Net.Up[r], m.UpSE[r]) {
			fmt.Fprintf(&b, " up[%d]=%.2f", r, m.Net.Up[r])
		}
		if links.Significant(m.Net.Down[r], m.DownSE[r]) {
			fmt.Fprintf(&b, " down[%d]=%.2f", r, m.Net.Down[r])
		}
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

// slowLinks names the links the fit reads slower than the line rate
// (significant ones), with their rate; empty without one.
func slowLinks(m *links.Fit) string {
	var b strings.Builder
	for l, x := range m.Net.Slow {
		if links.Significant(x, m.SlowSE[l]) {
			dir, r := "up", l
			if r >= len(m.Net.Up) {
				dir, r = "down", r-len(m.Net.Up)
			}
			fmt.Fprintf(&b, " %s[%d] at %.1f%%", dir, r, 100/(1+x))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "; slow links (of the line rate)" + b.String()
}

// pairList names the pairs that stand out: their time against the median
// pair's, with the standard error of its log.
func pairList(ps []links.Pair) string {
	if len(ps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (")
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d->%d x%.2f ±%.2f", p.Src, p.Dst, p.Factor, p.SE)
	}
	b.WriteString(")")
	return b.String()
}

func writeDecisionText(w io.Writer, d *tuner.Decision) error {
	fmt.Fprintf(w, "batch %d  epoch %d  version %d  observed %s\n", d.Batch, d.Epoch, d.Version, micros(d.Observed))
	switch {
	case d.Kept:
		fmt.Fprintf(w, "  kept: previous %s\n", micros(d.Previous))
	case d.Reverted:
		fmt.Fprintf(w, "  reverted: previous %s\n", micros(d.Previous))
	}
	var steady, erratic int
	for _, c := range d.Congested {
		switch c.Class {
		case detect.Steady:
			steady++
		case detect.Erratic:
			erratic++
		}
	}
	if m := d.Model; m != nil {
		fmt.Fprintf(w, "  link model: line rate %.4g B/s, latency %s, noise %.3f, rms %.3f; competing flows%s%s; pairs standing out %d%s\n",
			m.Net.C, micros(m.Net.Alpha), m.Noise, m.RMS, counts(m), slowLinks(m), len(m.Pairs), pairList(m.Pairs))
		if d.Evaluated > 0 {
			fmt.Fprintf(w, "  candidates judged: %d, predicted now %s\n", d.Evaluated, micros(d.Predicted))
		}
	} else {
		fmt.Fprintf(w, "  congested flows: %d steady, %d erratic\n", steady, erratic)
	}
	for _, t := range d.Trials {
		acc := "rejected"
		if t.Accepted {
			acc = "accepted"
		}
		fmt.Fprintf(w, "  trial %s  gain %.4f  %s\n", t.Swap, t.Gain(), acc)
	}
	if d.Pattern != nil {
		fmt.Fprintf(w, "  -> version %d from epoch %d\n", d.NewVersion, d.Effective)
	}
	if d.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", d.Note)
	}
	_, err := fmt.Fprintln(w)
	return err
}

type jsonTrial struct {
	Swap     string  `json:"swap"`
	Kind     string  `json:"kind"`
	Lowers   bool    `json:"lowers"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	Gain     float64 `json:"gain"`
	Accepted bool    `json:"accepted"`
}

type jsonClass struct {
	Flow  int    `json:"flow"`
	Class string `json:"class"`
}

type jsonDecision struct {
	Batch      int             `json:"batch"`
	Epoch      int             `json:"epoch"`
	Version    int             `json:"version"`
	Observed   float64         `json:"observed"`
	Previous   float64         `json:"previous"`
	Kept       bool            `json:"kept"`
	Reverted   bool            `json:"reverted"`
	Explored   bool            `json:"explored"`
	Congested  []jsonClass     `json:"congested"`
	Trials     []jsonTrial     `json:"trials"`
	NewVersion int             `json:"new_version,omitempty"`
	Effective  int             `json:"effective,omitempty"`
	Pattern    json.RawMessage `json:"pattern,omitempty"`
	Note       string          `json:"note,omitempty"`
}

func writeDecisionJSON(w io.Writer, d *tuner.Decision) error {
	j := jsonDecision{Batch: d.Batch, Epoch: d.Epoch, Version: d.Version, Observed: d.Observed, Previous: d.Previous,
		Kept: d.Kept, Reverted: d.Reverted, Explored: d.Explored, Congested: []jsonClass{}, Trials: []jsonTrial{}, Note: d.Note}
	for _, c := range d.Congested {
		j.Congested = append(j.Congested, jsonClass{c.Flow, c.Class.String()})
	}
	for _, t := range d.Trials {
		j.Trials = append(j.Trials, jsonTrial{t.Swap.String(), t.Swap.Kind.String(), t.Lowers, t.Before, t.After, t.Gain(), t.Accepted})
	}
	if d.Pattern != nil {
		j.NewVersion, j.Effective = d.NewVersion, d.Effective
		var b bytes.Buffer
		if err := wire.EncodeJSON(&b, d.Pattern); err != nil {
			return err
		}
		j.Pattern = b.Bytes()
	}
	return writeJSONLine(w, j)
}

// writeJSONLine writes v compactly on one line (json.Marshal also compacts
// the embedded pattern).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
