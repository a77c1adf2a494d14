// Package agree is what the ranks of a group must have alike, and the
// sentences every rank raises when they do not: their settings (Settings)
// and each collective call (Sig). A call's signature is hashed into the
// tags of its point-to-point messages (a call that differs never receives
// another's data), compared by digest where no tag carries it (host phases,
// large groups), and named in the mismatch's sentence. Its numbers mean the
// same on every rank that loads this library, whatever torch it runs.
package agree

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Sig is a call's signature: Fields numbers its entries.
type Sig [Fields]int64

// The entries of a Sig, in order.
const (
	Seq     = iota // the call's number on its group
	Op             // ten.Op, 0 for a barrier
	Dtype          // index in dtypes, an unknown name's hash, or -1 for none
	Numel          // elements of the call
	Root           // broadcast's and reduce's root, else -1
	Reduce         // index in reduces ("" for ops that do not reduce)
	Epoch          // the epoch of the call's key, -1 when untracked
	Version        // the key's pattern version, -1 when untracked
	Fields
)

// SaltBits is how much of a signature's hash a message tag carries: calls
// that differ share their tags with probability 2^-SaltBits.
const SaltBits = 20

var (
	reduces = []string{"", "sum", "avg", "product", "min", "max", "band", "bor", "bxor"}
	// torch's dtypes by the names torch.dtype prints without "torch.";
	// the order is fixed: append only.
	dtypes = []string{
		"float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128",
		"uint8", "int8", "int16", "int32", "int64", "bool", "uint16", "uint32", "uint64",
		"qint8", "quint8", "qint32", "quint4x2", "quint2x4",
		"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
		"bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
		"int1", "int2", "int3", "int4", "int5", "int6", "int7",
		"uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
	}
)

const barrier = "barrier"

// unknownDtype marks a dtype code as a hash of a name that dtypes lacks
// (a torch newer than this table): still equal exactly when the names are.
const unknownDtype = int64(1) << 40

// Sign makes the signature of a call; an op or reduce op it does not know
// is an error (they come from react_torch's own tables).
func Sign(seq int64, op, dtype string, numel, root int64, reduce string, epoch, version int64) (Sig, error) {
	var o ten.Op // OpInvalid: a barrier
	if op != barrier {
		var err error
		if o, err = ten.ParseOp(op); err != nil {
			return Sig{}, fmt.Errorf("%w or %s", err, barrier)
		}
	}
	r := slices.Index(reduces, reduce)
	if r < 0 {
		return Sig{}, fmt.Errorf("unknown reduce op %q (want one of %s)", reduce, strings.Join(reduces[1:], ", "))
	}
	d := int64(slices.Index(dtypes, dtype))
	if d < 0 && dtype != "" { // "": a barrier's
		h := fnv.New32a()
		h.Write([]byte(dtype))
		d = unknownDtype + int64(h.Sum32())
	}
	return Sig{seq, int64(o), d, numel, root, int64(r), epoch, version}, nil
}

func (s Sig) hash() [sha256.Size]byte {
	var b [8 * Fields]byte
	for i, v := range s {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return sha256.Sum256(b[:])
}

// Hash gives the SaltBits of the signature's hash that its messages'
// tags carry, and 62 other bits of it, non-negative so that a MAX reduction
// of (d, -d) finds whether every rank's is the same: equal digests mean
// equal calls (a collision has probability 2^-62).
func (s Sig) Hash() (salt uint32, digest int64) {
	h := s.hash()
	return binary.LittleEndian.Uint32(h[:]) & (1<<SaltBits - 1), int64(binary.LittleEndian.Uint64(h[8:]) >> 2)
}

// String says what the call is: "allreduce (sum) of 1000 float32, call 5
// on the group, epoch 4 of its key, pattern version 0".
func (s Sig) String() string {
	what := barrier
	if s[Op] != int64(ten.OpInvalid) {
		op := ten.Op(s[Op]).String()
		red := ""
		if s[Reduce] > 0 && s[Reduce] < int64(len(reduces)) {
			red = " (" + reduces[s[Reduce]] + ")"
		}
		dt := name(dtypes, s[Dtype], "dtype")
		if s[Dtype] >= unknownDtype {
			dt = fmt.Sprintf("dtype #%x (newer than this library)", s[Dtype]-unknownDtype)
		}
		root := ""
		if s[Root] >= 0 {
			root = fmt.Sprintf(" from root %d", s[Root])
		}
		what = fmt.Sprintf("%s%s of %d %s%s", op, red, s[Numel], dt, root)
	}
	key := ""
	if s[Epoch] >= 0 {
		key = fmt.Sprintf(", epoch %d of its key, pattern version %d", s[Epoch], s[Version])
	}
	return fmt.Sprintf("%s, call %d on the group%s", what, s[Seq], key)
}

func name(table []string, i int64, what string) string {
	if i >= 0 && i < int64(len(table)) {
		return table[i]
	}
	return fmt.Sprintf("%s %d", what, i)
}

// Ranks names ranks of a group of size: "every rank", "rank 2" or "ranks
// 0, 3".
func Ranks(rs []int, size int) string {
	if len(rs) == size && size > 1 {
		return "every rank"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	if len(rs) == 1 {
		return "rank " + s[0]
	}
	return "ranks " + strings.Join(s, ", ")
}

// Sentence groups ranks by the call they made, in the order of their
// lowest rank: "ranks 0, 1: allreduce ...; rank 2: allgather ...".
func Sentence(calls map[int]Sig, size int) string {
	var g grouping
	for _, r := range slices.Sorted(maps.Keys(calls)) {
		g.add(calls[r].String(), r)
	}
	return g.join(size, "; ", func(call, ranks string) string { return ranks + ": " + call })
}
