// Command react is the command-line face of react-torch: it generates,
// prints and checks collective patterns, replays recorded flow completion
// times through the tuner, and runs the simulation scenarios.
//
//	react pattern --op allreduce --algo tree --ranks 16 [--format text|json|dot]
//	react pattern check FILE|-
//	react replay [--pattern P.json] --fcts LOG [--bytes N] [--format text|json] [tuner flags]
//	react report [--pattern P.json] --fcts LOG [--bytes N] [--json] [--plot OUT.png] [tuner flags]
//	react sim --scenario FILE [--seed S] [--out DIR] [--format text|json]
//
// Exit status: 0 success, 1 a check failed, 2 malformed input or usage.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the input is well formed but wrong (a check failed)
	exitUsage = 2 // bad usage or malformed input
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is what a subcommand may touch, so tests can drive run directly.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one subcommand; later ones (sim, replay) join the table.
type command struct {
	name    string
	args    string
	summary string
	run     func(e *env, args []string) int
}

func commands() []command {
	return []command{
		{"pattern", "--op OP --algo ALGO --ranks N | check FILE", "generate a collective pattern, or check one for exactly-once semantics", runPattern},
		{"replay", "[--pattern P.json] --fcts LOG [--bytes N]", "replay a recorded FCT log through the tuner and print its decisions", runReplay},
		{"report", "[--pattern P.json] --fcts LOG [--json] [--plot OUT.png]", "replay an FCT log and report what the tuner learned: congested links, slow pairs, collective times, changes", runReport},
		{"sim", "--scenario FILE [--seed S] [--out DIR]", "run a simulation scenario: baseline, REACT and oracle side by side", runSim},
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		return run([]string{args[1], "-h"}, stdin, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "react: unknown subcommand %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: react <command> [arguments]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nrun 'react <command> -h' for a command's flags.\n")
}
