package transform

import (
	"math/bits"
	"math/rand/v2"
)

// Hashed contributions: the values the position evaluator propagates
// (see the comment in positions.go), two weighted sums modulo 2^61-1 and
// a count.

const prime = 1<<61 - 1

type val struct {
	h1, h2 uint64
	cnt    int64 // number of contributions held, counted with multiplicity
}

func (a val) add(b val) val {
	a.h1 += b.h1
	if a.h1 >= prime {
		a.h1 -= prime
	}
	a.h2 += b.h2
	if a.h2 >= prime {
		a.h2 -= prime
	}
	a.cnt += b.cnt
	return a
}

func (a val) sub(b val) val {
	a.h1 += prime - b.h1
	if a.h1 >= prime {
		a.h1 -= prime
	}
	a.h2 += prime - b.h2
	if a.h2 >= prime {
		a.h2 -= prime
	}
	a.cnt -= b.cnt
	return a
}

func addmod(a, b uint64) uint64 {
	a += b
	if a >= prime {
		a -= prime
	}
	return a
}

func submod(a, b uint64) uint64 { return addmod(a, prime-b) }

func mulmod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b) // < 2^122, so hi < 2^58
	r := (lo & prime) + (hi<<3 | lo>>61)
	if r >= prime {
		r -= prime
	}
	return r
}

func cntmod(c int64) uint64 {
	if c >= 0 {
		return uint64(c) % prime
	}
	return (prime - uint64(-c)%prime) % prime
}

// weights draws each rank's random contribution; the seed is fixed because
// the result must not depend on it.
func weights(n int) []val {
	rng := rand.New(rand.NewPCG(0x5eed, 0x7e11))
	w := make([]val, n)
	for r := range w {
		w[r] = val{rng.Uint64N(prime-1) + 1, rng.Uint64N(prime-1) + 1, 1}
	}
	return w
}
