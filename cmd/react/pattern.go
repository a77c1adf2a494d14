package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
)

const ops = "allreduce, allgather, reducescatter, broadcast, reduce"

// newFlagSet returns a flag set that reports nothing itself, so that help
// goes to stdout and errors to stderr, each once.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs; done reports that the caller should
// return code (help was printed, or the flags were bad).
func parseFlags(e *env, fs *flag.FlagSet, args []string, synopsis string) (code int, done bool) {
	err := fs.Parse(args)
	if err == nil {
		return exitOK, false
	}
	w, code := e.stderr, exitUsage
	if errors.Is(err, flag.ErrHelp) {
		w, code = e.stdout, exitOK
	} else {
		fmt.Fprintf(e.stderr, "%s: %v\n", fs.Name(), err)
	}
	fmt.Fprintf(w, "usage: %s %s\n", fs.Name(), synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
	return code, true
}

func runPattern(e *env, args []string) int {
	if len(args) > 0 && args[0] == "check" {
		return runPatternCheck(e, args[1:])
	}
	fs := newFlagSet("react pattern")
	opName := fs.String("op", "", "collective: "+ops)
	algo := fs.String("algo", "", "algorithm, e.g. tree, ring, halving_doubling, recursive_doubling (default: the op's first)")
	ranks := fs.Int("ranks", 0, "number of ranks, at least 2")
	root := fs.Int("root", -1, "root rank, for broadcast and reduce only (they default to 0)")
	format := fs.String("format", "text", "output: text, json or dot")
	const synopsis = "--op OP [--algo ALGO] --ranks N [--root R] [--format text|json|dot]\n       react pattern check FILE|-"
	if code, done := parseFlags(e, fs, args, synopsis); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "react pattern: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["op"] {
		return fail("missing --op (one of %s)", ops)
	}
	op, err := ten.ParseOp(*opName)
	if err != nil {
		return fail("%v", err)
	}
	if !set["ranks"] {
		return fail("missing --ranks")
	}
	var write func(w io.Writer, p *ten.Pattern) error
	switch *format {
	case "text":
		write = writeText
	case "json":
		write = wire.EncodeJSON
	case "dot":
		write = writeDot
	default:
		return fail("unknown --format %q (want text, json or dot)", *format)
	}
	if *algo == "" {
		*algo = pattern.Algos(op)[0]
	}
	if op.Rooted() && !set["root"] {
		*root = 0
	}
	p, err := pattern.Generate(op, *algo, *ranks, *root)
	if err != nil {
		return fail("%v", err)
	}
	out := bufio.NewWriter(e.stdout)
	err = write(out, p)
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "react pattern: writing: %v\n", err)
		return exitFail
	}
	return exitOK
}

func runPatternCheck(e *env, args []string) int {
	fs := newFlagSet("react pattern check")
	if code, done := parseFlags(e, fs, args, "FILE|-\n\nChecks a JSON pattern for exactly-once semantics; - reads stdin."); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.stderr, "react pattern check: "+format+"\n", a...)
		return code
	}
	if fs.NArg() != 1 {
		return fail(exitUsage, "want one FILE (or - for stdin), got %d arguments", fs.NArg())
	}
	name := fs.Arg(0)
	var data []byte
	var err error
	if name == "-" {
		name = "stdin"
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	p, err := wire.DecodeJSON(data)
	if err != nil {
		return fail(exitUsage, "%s: %v", name, err)
	}
	if err := semantics.Check(p); err != nil {
		var v *semantics.Violation
		if errors.As(err, &v) {
			return fail(exitFail, "%s: not exactly once: %v", name, err)
		}
		return fail(exitUsage, "%s: %v", name, err)
	}
	fmt.Fprintf(e.stdout, "ok: %s, exactly once\n", summary(p))
	return exitOK
}

// summary is the one-line description shared by text output and check.
func summary(p *ten.Pattern) string {
	root := ""
	if p.Op.Rooted() {
		root = fmt.Sprintf(", root %d", p.Root)
	}
	return fmt.Sprintf("%s %s, %d ranks%s, %d steps, %d chunks, %d flows",
		p.Op, p.Algo, p.Ranks, root, p.Steps(), p.Chunks(), len(p.Flows))
}

// writeText prints the pattern step by step, flows ordered by chunk.
func writeText(w io.Writer, p *ten.Pattern) error {
	if _, err := fmt.Fprintln(w, summary(p)); err != nil {
		return err
	}
	order := stepOrder(p)
	cw := len(strconv.Itoa(max(p.Chunks()-1, 0)))
	rw := len(strconv.Itoa(p.Ranks - 1))
	step := int32(0)
	for _, i := range order {
		f := &p.Flows[i]
		for ; step < f.Step; step++ {
			fmt.Fprintf(w, "step %d\n", step+1)
		}
		_, err := fmt.Fprintf(w, "  chunk %*d  %*d -> %-*d  %-6s  %s\n",
			cw, f.Chunk, rw, f.Src, rw, f.Dst, f.Kind, fraction(f.Fraction))
		if err != nil {
			return err
		}
	}
	return nil
}

// stepOrder lists flow indexes by step, then chunk, then as given.
func stepOrder(p *ten.Pattern) []int {
	order := make([]int, len(p.Flows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		fa, fb := &p.Flows[a], &p.Flows[b]
		if fa.Step != fb.Step {
			return int(fa.Step - fb.Step)
		}
		return int(fa.Chunk - fb.Chunk)
	})
	return order
}

func fraction(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// writeDot draws the TEN for Graphviz: one column per time step, one row per
// rank, edges coloured by chunk.
func writeDot(w io.Writer, p *ten.Pattern) error {
	palette := strings.Fields("blue red darkgreen darkorange purple brown deeppink teal goldenrod slategray")
	steps := p.Steps()
	fmt.Fprintf(w, "digraph pattern {\n")
	fmt.Fprintf(w, "  label=%s;\n", dotQuote(summary(p)))
	fmt.Fprintf(w, "  rankdir=LR;\n  node [shape=circle, fontsize=10];\n  edge [fontsize=9];\n")
	for t := 0; t <= steps; t++ {
		fmt.Fprintf(w, "  { rank=same;")
		for r := 0; r < p.Ranks; r++ {
			fmt.Fprintf(w, " \"%d:%d\";", t, r)
		}
		fmt.Fprintf(w, " }\n")
	}
	// Invisible edges keep each rank on its own row.
	for r := 0; r < p.Ranks; r++ {
		for t := 0; t < steps; t++ {
			fmt.Fprintf(w, "  \"%d:%d\" -> \"%d:%d\" [style=invis, weight=10];\n", t, r, t+1, r)
		}
	}
	for _, i := range stepOrder(p) {
		f := &p.Flows[i]
		colour := palette[int(f.Chunk)%len(palette)]
		_, err := fmt.Fprintf(w, "  \"%d:%d\" -> \"%d:%d\" [label=\"c%d %s %s\", color=%s, fontcolor=%s];\n",
			f.Step-1, f.Src, f.Step, f.Dst, f.Chunk, f.Kind, fraction(f.Fraction), colour, colour)
		if err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "}\n")
	return err
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
