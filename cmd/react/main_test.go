package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func runArgs(args []string, stdin string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRun(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join("testdata", "pattern-allreduce-tree-4.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		stdout     string // substrings; "" matches anything
		stderr     string
		wantNoErrs bool
	}{
		{"no arguments", nil, "", 2, "", "usage: react <command>", false},
		{"-h", []string{"-h"}, "", 0, "pattern", "", true},
		{"help", []string{"help"}, "", 0, "commands:", "", true},
		{"help pattern", []string{"help", "pattern"}, "", 0, "-ranks int", "", true},
		{"unknown subcommand", []string{"simulate"}, "", 2, "", `unknown subcommand "simulate"`, false},
		{"pattern -h", []string{"pattern", "-h"}, "", 0, "check FILE", "", true},
		{"unknown flag", []string{"pattern", "--bogus"}, "", 2, "", "flag provided but not defined: -bogus", false},
		{"bad int flag", []string{"pattern", "--op", "allreduce", "--ranks", "four"}, "", 2, "", `invalid value "four" for flag -ranks`, false},
		{"missing op", []string{"pattern", "--ranks", "4"}, "", 2, "", "missing --op", false},
		{"unknown op", []string{"pattern", "--op", "alltoall", "--ranks", "4"}, "", 2, "", `unknown op "alltoall"`, false},
		{"missing ranks", []string{"pattern", "--op", "allreduce"}, "", 2, "", "missing --ranks", false},
		{"unknown algo", []string{"pattern", "--op", "allreduce", "--algo", "star", "--ranks", "4"}, "", 2, "", `no algorithm "star"`, false},
		{"one rank", []string{"pattern", "--op", "allreduce", "--ranks", "1"}, "", 2, "", "at least 2 ranks", false},
		{"root on allreduce", []string{"pattern", "--op", "allreduce", "--ranks", "4", "--root", "1"}, "", 2, "", "has no root", false},
		{"root out of range", []string{"pattern", "--op", "reduce", "--ranks", "4", "--root", "4"}, "", 2, "", "root 4 out of range", false},
		{"unknown format", []string{"pattern", "--op", "allreduce", "--ranks", "4", "--format", "xml"}, "", 2, "", `unknown --format "xml"`, false},
		{"stray argument", []string{"pattern", "--op", "allreduce", "--ranks", "4", "extra"}, "", 2, "", `unexpected argument "extra"`, false},
		{"default algo", []string{"pattern", "--op", "allgather", "--ranks", "3"}, "", 0, "allgather ring, 3 ranks", "", true},
		{"rooted default root", []string{"pattern", "--op", "broadcast", "--ranks", "5"}, "", 0, "broadcast tree, 5 ranks, root 0,", "", true},
		{"rooted with root", []string{"pattern", "--op", "reduce", "--ranks", "5", "--root", "3", "--format", "json"}, "", 0, `"root": 3`, "", true},
		{"check without file", []string{"pattern", "check"}, "", 2, "", "want one FILE", false},
		{"check two files", []string{"pattern", "check", "a", "b"}, "", 2, "", "got 2 arguments", false},
		{"check missing file", []string{"pattern", "check", "testdata/nope.json"}, "", 2, "", "no such file", false},
		{"check stdin", []string{"pattern", "check", "-"}, string(valid), 0, "ok: allreduce tree, 4 ranks, 4 steps, 2 chunks, 12 flows, exactly once", "", true},
		{"check stdin empty", []string{"pattern", "check", "-"}, "", 2, "", "stdin: wire: json: empty input", false},
		{"check -h", []string{"pattern", "check", "-h"}, "", 0, "exactly-once", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(tt.args, tt.stdin)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) || (tt.wantNoErrs && stderr != "") {
				t.Fatalf("run(%q) = %d\nstdout:\n%s\nstderr:\n%s\nwant %d, stdout containing %q, stderr containing %q",
					tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestGoldenPattern(t *testing.T) {
	for _, format := range []string{"json", "text", "dot"} {
		t.Run(format, func(t *testing.T) {
			code, stdout, stderr := runArgs([]string{"pattern", "--op", "allreduce", "--algo", "tree", "--ranks", "4", "--format", format}, "")
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			ext := map[string]string{"json": "json", "text": "txt", "dot": "dot"}[format]
			golden(t, "pattern-allreduce-tree-4."+ext, stdout)
		})
	}
}

// TestGoldenCheck records exit status, stdout and stderr of pattern check
// on valid, wrong and malformed files.
func TestGoldenCheck(t *testing.T) {
	for _, tt := range []struct {
		file, golden string
		code         int
	}{
		{"pattern-allreduce-tree-4.json", "check-valid.golden", 0},
		{"check-dropped-flow.json", "check-dropped-flow.golden", 1},
		{"check-bad-json.json", "check-bad-json.golden", 2},
		{"check-unknown-op.json", "check-unknown-op.golden", 2},
		{"check-rank-out-of-range.json", "check-rank-out-of-range.golden", 2},
		{"check-ranks-1.json", "check-ranks-1.golden", 2},
	} {
		t.Run(tt.file, func(t *testing.T) {
			code, stdout, stderr := runArgs([]string{"pattern", "check", filepath.Join("testdata", tt.file)}, "")
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			golden(t, tt.golden, fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, stdout, stderr))
		})
	}
}

// TestEveryGeneratorChecks runs every op and algorithm through the JSON
// form and back into pattern check, as a user would pipe them.
func TestEveryGeneratorChecks(t *testing.T) {
	for _, op := range []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce} {
		for _, algo := range pattern.Algos(op) {
			for _, n := range []int{2, 3, 4, 7, 16} {
				args := []string{"pattern", "--op", op.String(), "--algo", algo, "--ranks", fmt.Sprint(n), "--format", "json"}
				if op.Rooted() {
					args = append(args, "--root", fmt.Sprint(n-1))
				}
				code, js, stderr := runArgs(args, "")
				if code != 0 {
					t.Fatalf("%q: exit %d: %s", args, code, stderr)
				}
				code, stdout, stderr := runArgs([]string{"pattern", "check", "-"}, js)
				if code != 0 || !strings.HasPrefix(stdout, "ok: "+op.String()+" "+algo+", ") {
					t.Errorf("check of %q: exit %d\n%s%s", args, code, stdout, stderr)
				}
			}
		}
	}
}
