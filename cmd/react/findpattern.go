package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
)

// findPattern finds the built-in pattern an FCT log's first epoch ran: the
// one whose flows have the logged chunks, steps, sources and destinations,
// in order. Endpoints do not tell an op's kinds of flow apart (a ring
// AllGather and a ring ReduceScatter send alike), so the op comes from the
// log's name where react_torch wrote it (PATH.OP.DTYPE.NUMEL[.rootR].jsonl);
// without it, every op is tried and more than one match is an error.
func findPattern(logName string, ends []wire.FlowEnds, ranks int) (*ten.Pattern, error) {
	for _, e := range ends {
		ranks = max(ranks, e.Src+1, e.Dst+1)
	}
	ops := []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce}
	root := -1
	for _, part := range strings.Split(filepath.Base(logName), ".") {
		if op, err := ten.ParseOp(part); err == nil {
			ops = []ten.Op{op}
		}
		if r, ok := strings.CutPrefix(part, "root"); ok {
			if n, err := strconv.Atoi(r); err == nil {
				root = n
			}
		}
	}
	var found []*ten.Pattern
	for _, op := range ops {
		roots := []int{-1}
		if op.Rooted() {
			roots = roots[:0]
			for r := range ranks {
				if root < 0 || r == root {
					roots = append(roots, r)
				}
			}
		}
		for _, algo := range pattern.Algos(op) {
			for _, r := range roots {
				p, err := pattern.Generate(op, algo, ranks, r)
				// one per op: algorithms that send alike are one pattern
				if err == nil && sameEnds(p, ends) && (len(found) == 0 || found[len(found)-1].Op != op) {
					found = append(found, p)
				}
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: no built-in pattern of %d ranks has the logged flows; give --pattern", logName, ranks)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, p := range found {
		names[i] = fmt.Sprintf("%v/%s root %d", p.Op, p.Algo, p.Root)
	}
	return nil, fmt.Errorf("%s: the logged flows fit %s; give --pattern", logName, strings.Join(names, ", "))
}

func sameEnds(p *ten.Pattern, ends []wire.FlowEnds) bool {
	if len(p.Flows) != len(ends) {
		return false
	}
	for i, f := range p.Flows {
		e := ends[i]
		if int(f.Chunk) != e.Chunk || int(f.Step) != e.Step || int(f.Src) != e.Src || int(f.Dst) != e.Dst {
			return false
		}
	}
	return true
}
