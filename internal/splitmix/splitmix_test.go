package splitmix

import "testing"

// The reference outputs of SplitMix64 seeded with 0 (its first three
// values), which every user of this package reproduces.
func TestNextMatchesTheReference(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	for i, w := range want {
		if got := Next(uint64(i) * Golden); got != w {
			t.Errorf("value %d: %#x, want %#x", i, got, w)
		}
	}
}
