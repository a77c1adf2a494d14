package agree

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/react-torch/react-torch/internal/settings"
)

// Settings says what keeps the ranks of a group of size from running
// together, given every rank's settings as set (by name; the others keep
// their defaults): each rank's problems (settings.Check) with the ranks
// that have them, else the shared settings whose values differ, by value
// and ranks. "" when nothing does.
func Settings(every []map[string]json.RawMessage, size int) string {
	var problems grouping
	for r, set := range every {
		for _, p := range settings.Check(set, size) {
			problems.add(p, r)
		}
	}
	if len(problems.order) > 0 {
		return fmt.Sprintf("invalid settings for a react group of %d ranks: %s", size,
			problems.join(size, "; ", func(p, ranks string) string { return ranks + ": " + p }))
	}
	var differ []string
	for _, s := range settings.All() {
		if !s.Shared {
			continue
		}
		var vals grouping
		for r, set := range every {
			vals.add(canonical(set[s.Name], s.Default), r)
		}
		if len(vals.order) > 1 {
			differ = append(differ, s.Var+" is "+vals.join(size, ", ", func(v, ranks string) string { return v + " on " + ranks }))
		}
	}
	if len(differ) > 0 {
		return "the ranks of a react group must share these settings: " + strings.Join(differ, "; ")
	}
	return ""
}

// grouping gathers ranks by what they have, in the order first seen.
type grouping struct {
	order []string
	who   map[string][]int
}

func (g *grouping) add(what string, rank int) {
	if g.who == nil {
		g.who = map[string][]int{}
	}
	if g.who[what] == nil {
		g.order = append(g.order, what)
	}
	g.who[what] = append(g.who[what], rank)
}

// join says each group by say(what, its ranks named).
func (g *grouping) join(size int, sep string, say func(what, ranks string) string) string {
	parts := make([]string, len(g.order))
	for i, w := range g.order {
		parts[i] = say(w, Ranks(g.who[w], size))
	}
	return strings.Join(parts, sep)
}

// canonical is a value's JSON as Go writes it, the default's where none
// was set.
func canonical(raw json.RawMessage, def any) string {
	var v any = def
	if raw != nil {
		if err := json.Unmarshal(raw, &v); err != nil { // settings.Check said so first
			return string(raw)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}
