// Package pattern generates the static collective patterns REACT starts
// from and tunes: NCCL's double binary tree and the ring for AllReduce,
// Rabenseifner's halving-doubling, the ring and recursive doubling for
// AllGather, the ring for ReduceScatter, and a binary tree and a binomial
// tree for Broadcast and Reduce. Every generator works for any rank count N >= 2, not only powers
// of two, and emits its flows in step order.
//
// The generators named after an algorithm panic on a rank count below 2 or
// above ten.MaxRanks or a root out of range, since those are programming
// errors; Generate is the checked entry point for input from users and
// refuses more than ten.MaxRanks ranks with an error wrapping ten.ErrLimit
// (the checker in package semantics refuses the same patterns), so that a
// typo in a rank count cannot exhaust memory: the rings grow as N^2.
package pattern

import (
	"fmt"
	"strings"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Algorithm names, as Pattern.Algo and the JSON form spell them.
const (
	algoTree              = "tree"
	algoRing              = "ring"
	algoHalvingDoubling   = "halving_doubling"
	algoRecursiveDoubling = "recursive_doubling"
	algoBinomial          = "binomial"
)

// Algos lists the algorithms Generate knows for op, the default first. It
// returns nil for an unknown op.
func Algos(op ten.Op) []string {
	switch op {
	case ten.AllReduce:
		return []string{algoTree, algoRing, algoHalvingDoubling}
	case ten.AllGather:
		return []string{algoRing, algoRecursiveDoubling}
	case ten.ReduceScatter:
		return []string{algoRing}
	case ten.Broadcast, ten.Reduce:
		return []string{algoTree, algoBinomial}
	}
	return nil
}

// Generate builds the pattern of algo for op on ranks ranks. For broadcast
// and reduce root must lie in [0, ranks); for every other op it must be -1
// (a root there is a caller's mistake, not something to ignore).
func Generate(op ten.Op, algo string, ranks, root int) (*ten.Pattern, error) {
	algos := Algos(op)
	if algos == nil {
		return nil, fmt.Errorf("pattern: unknown op %v", op)
	}
	known := false
	for _, a := range algos {
		known = known || a == algo
	}
	if !known {
		return nil, fmt.Errorf("pattern: no algorithm %q for %v (want one of %s)", algo, op, strings.Join(algos, ", "))
	}
	if ranks < 2 {
		return nil, fmt.Errorf("pattern: %v needs at least 2 ranks, got %d", op, ranks)
	}
	if ranks > ten.MaxRanks {
		return nil, fmt.Errorf("pattern: %v: at most %d ranks (ten.MaxRanks), got %d: %w", op, ten.MaxRanks, ranks, ten.ErrLimit)
	}
	if op.Rooted() {
		if root < 0 || root >= ranks {
			return nil, fmt.Errorf("pattern: %v root %d out of range [0, %d)", op, root, ranks)
		}
	} else if root != -1 {
		return nil, fmt.Errorf("pattern: %v has no root, want -1, got %d", op, root)
	}
	switch op {
	case ten.AllReduce:
		switch algo {
		case algoTree:
			return TreeAllReduce(ranks), nil
		case algoRing:
			return RingAllReduce(ranks), nil
		default:
			return HalvingDoublingAllReduce(ranks), nil
		}
	case ten.AllGather:
		if algo == algoRing {
			return RingAllGather(ranks), nil
		}
		return RecursiveDoublingAllGather(ranks), nil
	case ten.ReduceScatter:
		return RingReduceScatter(ranks), nil
	case ten.Broadcast:
		if algo == algoBinomial {
			return BinomialBroadcast(ranks, root), nil
		}
		return TreeBroadcast(ranks, root), nil
	default:
		if algo == algoBinomial {
			return BinomialReduce(ranks, root), nil
		}
		return TreeReduce(ranks, root), nil
	}
}

// flowCount is the exact number of flows a generator emits, so that
// generators preallocate.
func flowCount(op ten.Op, algo string, n int) int {
	switch {
	case algo == algoTree && op == ten.AllReduce:
		return 4 * (n - 1)
	case algo == algoTree, algo == algoBinomial:
		return n - 1
	case algo == algoRing && op == ten.AllReduce:
		return 2 * n * (n - 1)
	case algo == algoRing:
		return n * (n - 1)
	case algo == algoHalvingDoubling:
		p := floorPow2(n)
		return 2*p*(p-1) + 2*(n-p)*p
	case algo == algoRecursiveDoubling:
		p := floorPow2(n)
		return n*log2(p) + 2*(n-p)
	}
	return 0
}

func checkRanks(what string, n int) {
	if n < 2 {
		panic(fmt.Sprintf("pattern: %s needs at least 2 ranks, got %d", what, n))
	}
	if n > ten.MaxRanks {
		panic(fmt.Sprintf("pattern: %s: at most %d ranks, got %d", what, ten.MaxRanks, n))
	}
}

// floorPow2 is the largest power of two <= n (n >= 1).
func floorPow2(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// log2 of a power of two.
func log2(p int) int {
	k := 0
	for 1<<k < p {
		k++
	}
	return k
}
