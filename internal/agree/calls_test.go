package agree

import (
	"strings"
	"testing"
)

func TestSignRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct {
		op, dtype, reduce, want string
	}{
		{"alltoall", "float32", "", `unknown op "alltoall"`},
		{"allreduce", "float32", "mean", `unknown reduce op "mean"`},
	} {
		_, err := Sign(0, tc.op, tc.dtype, 1, -1, tc.reduce, -1, -1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Sign(%q, %q, %q) = %v, want %q", tc.op, tc.dtype, tc.reduce, err, tc.want)
		}
	}
}

func TestEveryFieldChangesSaltAndDigest(t *testing.T) {
	base, err := Sign(7, "allreduce", "float32", 1000, -1, "sum", 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	salt, digest := base.Hash()
	if salt >= 1<<SaltBits || digest < 0 {
		t.Fatalf("salt %d, digest %d out of range", salt, digest)
	}
	for i := range Fields {
		other := base
		other[i]++
		s, d := other.Hash()
		if s == salt {
			t.Errorf("field %d: same salt", i)
		}
		if d == digest {
			t.Errorf("field %d: same digest", i)
		}
	}
}

// The hash is part of the wire: ranks that load builds of this library
// made apart must still tag alike.
func TestSaltAndDigestAreStable(t *testing.T) {
	s, _ := Sign(7, "allreduce", "float32", 1000, -1, "sum", 3, 1)
	if got, want := s, (Sig{7, 1, 0, 1000, -1, 1, 3, 1}); got != want {
		t.Fatalf("Sign = %d, want %d", got, want)
	}
	if salt, digest := s.Hash(); salt != 0x58a15 || digest != 0x19f0190a8501dbdb {
		t.Errorf("salt %#x, digest %#x changed", salt, digest)
	}
}

func TestUnknownDtypesDifferByName(t *testing.T) {
	a, _ := Sign(0, "allgather", "float9_e3m5", 8, -1, "", -1, -1)
	b, _ := Sign(0, "allgather", "float9_e4m4", 8, -1, "", -1, -1)
	c, _ := Sign(0, "allgather", "float9_e3m5", 8, -1, "", -1, -1)
	if a == b || a != c {
		t.Errorf("unknown dtypes: %v %v %v", a, b, c)
	}
	if got := a.String(); got != "allgather of 8 dtype #475057f (newer than this library), call 0 on the group" {
		t.Errorf("String = %q", got)
	}
}

func TestSentence(t *testing.T) {
	sign := func(seq int64, op, dtype string, numel, root int64, reduce string, epoch, version int64) Sig {
		s, err := Sign(seq, op, dtype, numel, root, reduce, epoch, version)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ar := sign(5, "allreduce", "float32", 1000, -1, "sum", 4, 0)
	ai := sign(5, "allreduce", "int32", 1000, -1, "sum", 4, 0)
	bc := sign(2, "broadcast", "int64", 10, 0, "", -1, -1)
	bar := sign(9, "barrier", "", 0, -1, "", -1, -1)
	for _, tc := range []struct {
		calls map[int]Sig
		size  int
		want  string
	}{
		{map[int]Sig{0: ar, 1: ar, 2: ar}, 3,
			"every rank: allreduce (sum) of 1000 float32, call 5 on the group, epoch 4 of its key, pattern version 0"},
		{map[int]Sig{3: ai, 0: ar, 1: ar, 2: ar}, 4,
			"ranks 0, 1, 2: allreduce (sum) of 1000 float32, call 5 on the group, epoch 4 of its key, pattern version 0; " +
				"rank 3: allreduce (sum) of 1000 int32, call 5 on the group, epoch 4 of its key, pattern version 0"},
		{map[int]Sig{1: bc, 0: bar}, 4,
			"rank 0: barrier, call 9 on the group; rank 1: broadcast of 10 int64 from root 0, call 2 on the group"},
		{map[int]Sig{0: {1, 17, 99, 4, -1, 0, -1, -1}}, 1,
			"rank 0: op(17) of 4 dtype 99, call 1 on the group"},
	} {
		if got := Sentence(tc.calls, tc.size); got != tc.want {
			t.Errorf("Sentence(%v)\n got %q\nwant %q", tc.calls, got, tc.want)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	for i := range b.N {
		s, _ := Sign(int64(i), "allreduce", "float32", 1000, -1, "sum", 3, 1)
		s.Hash()
	}
}
