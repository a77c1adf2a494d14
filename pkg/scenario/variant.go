package scenario

import (
	"fmt"
	"slices"

	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// variantPatterns applies a variant's transforms to the initial patterns,
// or generates its flat patterns over every GPU of sc's jobs.
func variantPatterns(v *VariantSpec, sc *Scenario, initial []*ten.Pattern) ([]*ten.Pattern, error) {
	if v.Flat {
		var pats []*ten.Pattern
		for i := range sc.Jobs {
			p, err := sc.Jobs[i].patternOn(sc.Topology.gpus())
			if err != nil {
				return nil, fmt.Errorf("job %s flat: %w", sc.Jobs[i].Name, err)
			}
			pats = append(pats, p)
		}
		return pats, nil
	}
	pats := slices.Clone(initial)
	for i, sw := range v.Swaps {
		t, err := sw.swap(pats[sw.Job])
		if err != nil {
			return nil, fmt.Errorf("swaps[%d]: %w", i, err)
		}
		q := transform.Apply(pats[sw.Job], t)
		if err := semantics.Check(q); err != nil {
			return nil, fmt.Errorf("swaps[%d] (%v) breaks the collective: %w", i, t, err)
		}
		pats[sw.Job] = q
	}
	return pats, nil
}

// swap turns a hand-written transform of p into a transform.Swap.
func (sw *SwapSpec) swap(p *ten.Pattern) (transform.Swap, error) {
	rank := func(what string, r int) error {
		if r < 0 || r >= p.Ranks {
			return fmt.Errorf("%s swap: %s = %d, want a rank in [0, %d)", sw.Kind, what, r, p.Ranks)
		}
		return nil
	}
	if sw.Kind == "chunk" || sw.Kind == "position" {
		if sw.Chunk < 0 || sw.Chunk >= p.Chunks() {
			return transform.Swap{}, fmt.Errorf("%s swap: chunk %d out of range [0, %d)", sw.Kind, sw.Chunk, p.Chunks())
		}
	}
	if sw.Kind == "global" || sw.Kind == "chunk" {
		if err := cmpErr(rank("x", sw.X), rank("y", sw.Y)); err != nil {
			return transform.Swap{}, err
		}
	}
	switch sw.Kind {
	case "global":
		return transform.GlobalSwap(sw.X, sw.Y), nil
	case "chunk":
		return transform.ChunkSwap(sw.Chunk, sw.X, sw.Y), nil
	case "position":
		if len(sw.A) != 2 || len(sw.B) != 2 {
			return transform.Swap{}, fmt.Errorf("position swap: a and b must be [step, rank], got %v and %v", sw.A, sw.B)
		}
		if err := cmpErr(rank("a's rank", sw.A[1]), rank("b's rank", sw.B[1])); err != nil {
			return transform.Swap{}, err
		}
		c := int32(sw.Chunk)
		return transform.PositionSwap(transform.Vertex{Chunk: c, Step: int32(sw.A[0]), Rank: int32(sw.A[1])},
			transform.Vertex{Chunk: c, Step: int32(sw.B[0]), Rank: int32(sw.B[1])}), nil
	}
	return transform.Swap{}, fmt.Errorf("unknown kind %q (want global, chunk or position)", sw.Kind)
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
