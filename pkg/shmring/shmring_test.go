package shmring_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/react-torch/react-torch/pkg/shmring"
)

// region returns n zero bytes, 8-byte aligned like shared memory is.
func region(n int) []byte {
	w := make([]uint64, (n+7)/8+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)[:n]
}

func newRing(t testing.TB, slots, slotSize uint32, sum shmring.Checksum) (*shmring.Ring, []byte) {
	t.Helper()
	size, err := shmring.Size(slots, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	b := region(size)
	r, err := shmring.Format(b, slots, slotSize, sum)
	if err != nil {
		t.Fatal(err)
	}
	return r, b
}

func TestLayoutBytes(t *testing.T) {
	_, b := newRing(t, 3, 64, shmring.CRC32C)
	le := binary.LittleEndian
	if len(b) != 192+3*64 {
		t.Fatalf("size %d", len(b))
	}
	for _, f := range []struct {
		off  int
		got  uint64
		want uint64
	}{{8, uint64(le.Uint32(b[8:])), 1}, {12, uint64(le.Uint32(b[12:])), 192}, {16, uint64(le.Uint32(b[16:])), 3}, {20, uint64(le.Uint32(b[20:])), 64}, {24, uint64(le.Uint32(b[24:])), 1}} {
		if f.got != f.want {
			t.Errorf("offset %d: %d, want %d", f.off, f.got, f.want)
		}
	}
	if string(b[:8]) != "REACTRNG" {
		t.Errorf("magic %q", b[:8])
	}
	r, _ := shmring.Open(b)
	if err := r.Push([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	// head at 64, slot 0 at 192: seq, len, crc32c, payload.
	if le.Uint64(b[64:]) != 1 || le.Uint64(b[192:]) != 1 || le.Uint32(b[200:]) != 5 ||
		le.Uint32(b[204:]) != crc32.Checksum([]byte("hello"), crc32.MakeTable(crc32.Castagnoli)) || string(b[208:213]) != "hello" {
		t.Fatalf("slot 0 bytes % x", b[192:216])
	}
	if _, err := r.Read(nil); err != nil {
		t.Fatal(err)
	}
	r.Advance(1, true)
	if le.Uint64(b[128:]) != 1 || le.Uint64(b[136:]) != 1 {
		t.Fatalf("tail %d rejected %d", le.Uint64(b[128:]), le.Uint64(b[136:]))
	}
}

// TestCRC32CCheckValue pins the checksum to the standard check value, which
// the ABI documentation quotes for writers in other languages.
func TestCRC32CCheckValue(t *testing.T) {
	if got := crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)); got != 0xe3069283 {
		t.Fatalf("crc32c check value 0x%08x", got)
	}
	if got := crc32.ChecksumIEEE([]byte("123456789")); got != 0xcbf43926 {
		t.Fatalf("crc32 check value 0x%08x", got)
	}
}

func TestOpenErrors(t *testing.T) {
	good := func() []byte { _, b := newRing(t, 2, 32, shmring.CRC32C); return b }
	le := binary.LittleEndian
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"short", func(b []byte) []byte { return b[:100] }, "header alone needs 192"},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, `magic "XEACTRNG"`},
		{"version", func(b []byte) []byte { le.PutUint32(b[8:], 2); return b }, "version 2, want 1"},
		{"header size", func(b []byte) []byte { le.PutUint32(b[12:], 128); return b }, "header size 128"},
		{"no slots", func(b []byte) []byte { le.PutUint32(b[16:], 0); return b }, "slot count 0"},
		{"odd slot size", func(b []byte) []byte { le.PutUint32(b[20:], 33); return b }, "slot size 33"},
		{"tiny slot", func(b []byte) []byte { le.PutUint32(b[20:], 16); return b }, "slot size 16"},
		{"slots past end", func(b []byte) []byte { le.PutUint32(b[16:], 3); return b }, "need 288"},
		{"checksum", func(b []byte) []byte { le.PutUint32(b[24:], 7); return b }, "checksum 7"},
		{"unaligned", func(b []byte) []byte { c := region(len(b) + 8)[4:]; copy(c, b); return c }, "not 8-byte aligned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shmring.Open(tc.edit(good()))
			var he *shmring.HeaderError
			if !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a HeaderError containing %q", err, tc.want)
			}
		})
	}
	if _, err := shmring.Format(region(100), 2, 32, shmring.CRC32C); err == nil || !strings.Contains(err.Error(), "need 256") {
		t.Fatalf("Format into a short region: %v", err)
	}
	if _, err := shmring.Format(region(256), 2, 32, 0); err == nil || !strings.Contains(err.Error(), "checksum 0") {
		t.Fatalf("Format with checksum 0: %v", err)
	}
	if _, err := shmring.Size(shmring.MaxSlots+1, 64); err == nil {
		t.Fatal("Size accepted too many slots")
	}
}

func TestPushReadWrap(t *testing.T) {
	for _, sum := range []shmring.Checksum{shmring.CRC32C, shmring.CRC32} {
		t.Run(sum.String(), func(t *testing.T) {
			r, _ := newRing(t, 3, 40, sum)
			if r.MaxPayload() != 24 || r.Slots() != 3 || r.SlotSize() != 40 || r.Checksum() != sum {
				t.Fatalf("geometry %d %d %d %v", r.MaxPayload(), r.Slots(), r.SlotSize(), r.Checksum())
			}
			if _, err := r.Read(nil); !errors.Is(err, shmring.ErrEmpty) {
				t.Fatalf("empty ring: %v", err)
			}
			if err := r.Push(make([]byte, 25)); !errors.Is(err, shmring.ErrTooLarge) {
				t.Fatalf("oversized push: %v", err)
			}
			var buf []byte
			for i := range 10 {
				msg := bytes.Repeat([]byte{byte('a' + i)}, i%25)
				if err := r.Push(msg); err != nil {
					t.Fatalf("push %d: %v", i, err)
				}
				if i%2 == 0 { // keep two in flight at times
					continue
				}
				for r.Tail() < r.Head() {
					got, err := r.Read(buf)
					if err != nil {
						t.Fatalf("read %d: %v", r.Tail(), err)
					}
					n := int(r.Tail())
					if want := bytes.Repeat([]byte{byte('a' + n)}, n%25); !bytes.Equal(got, want) {
						t.Fatalf("message %d: %q, want %q", n, got, want)
					}
					buf = got
					r.Advance(1, false)
				}
			}
			for range 3 {
				if err := r.Push([]byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Push([]byte("x")); !errors.Is(err, shmring.ErrFull) {
				t.Fatalf("push into a full ring: %v", err)
			}
			if r.Rejected() != 0 {
				t.Fatalf("rejected %d", r.Rejected())
			}
		})
	}
}

// TestBadSlots damages one published slot the way a faulty writer would
// and checks that it is named, that skipping it is counted, and that the
// next slot reads.
func TestBadSlots(t *testing.T) {
	le := binary.LittleEndian
	const slotSize = 48
	for _, tc := range []struct {
		name string
		kind shmring.SlotKind
		edit func(b []byte) // b: the region; message 1 is in slot 1
		want string
	}{
		{"never written", shmring.Torn, func(b []byte) { le.PutUint64(b[192+slotSize:], 0) }, "sequence 0, want 2"},
		{"stale", shmring.Torn, func(b []byte) { le.PutUint64(b[192+slotSize:], 1) }, "sequence 1, want 2"},
		{"length", shmring.Truncated, func(b []byte) { le.PutUint32(b[192+slotSize+8:], 33) }, "length 33, a slot holds 32"},
		{"payload byte", shmring.Corrupt, func(b []byte) { b[192+slotSize+16] ^= 1 }, "crc32c 0x"},
		{"checksum", shmring.Corrupt, func(b []byte) { b[192+slotSize+12] ^= 0x80 }, "the slot says"},
		{"short length", shmring.Corrupt, func(b []byte) { le.PutUint32(b[192+slotSize+8:], 3) }, "(3 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, b := newRing(t, 4, slotSize, shmring.CRC32C)
			for _, m := range []string{"zero", "one-one", "two"} {
				if err := r.Push([]byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := r.Read(nil); err != nil || string(got) != "zero" {
				t.Fatalf("message 0: %q %v", got, err)
			}
			r.Advance(1, false)
			tc.edit(b)
			_, err := r.Read(nil)
			var se *shmring.SlotError
			if !errors.As(err, &se) || se.Kind != tc.kind || se.Seq != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a %v SlotError at message 1 containing %q", err, tc.kind, tc.want)
			}
			r.Advance(1, true)
			if got, err := r.Read(nil); err != nil || string(got) != "two" {
				t.Fatalf("message after the bad slot: %q %v", got, err)
			}
			if r.Rejected() != 1 {
				t.Fatalf("rejected %d, want 1", r.Rejected())
			}
		})
	}
}

func TestHeadAndTailFaults(t *testing.T) {
	le := binary.LittleEndian
	r, b := newRing(t, 2, 32, shmring.CRC32C)
	le.PutUint64(b[64:], 5) // head 5, tail 0: three messages overwritten
	_, err := r.Read(nil)
	var se *shmring.SlotError
	if !errors.As(err, &se) || se.Kind != shmring.Overrun || se.Lost != 3 {
		t.Fatalf("overrun: %v", err)
	}
	r.Advance(se.Lost, true)
	if _, err := r.Read(nil); !errors.As(err, &se) || se.Kind != shmring.Torn || se.Seq != 3 {
		t.Fatalf("after skipping the overrun: %v", err)
	}
	le.PutUint64(b[64:], 1) // head behind tail
	var he *shmring.HeaderError
	if _, err := r.Read(nil); !errors.As(err, &he) || !strings.Contains(err.Error(), "head 1 behind tail 3") {
		t.Fatalf("head behind tail: %v", err)
	}
	if err := r.Push(nil); !errors.As(err, &he) {
		t.Fatalf("push with head behind tail: %v", err)
	}
}

// TestGeometryFixedAtOpen: a writer that rewrites the slot count later
// cannot make the reader index past the region.
func TestGeometryFixedAtOpen(t *testing.T) {
	r, b := newRing(t, 2, 32, shmring.CRC32C)
	binary.LittleEndian.PutUint32(b[16:], 1000)
	for i := range 5 {
		if err := r.Push([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Read(nil); err != nil || len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("message %d: %v %v", i, got, err)
		}
		r.Advance(1, false)
	}
}

func TestConcurrentWriterReader(t *testing.T) {
	r, _ := newRing(t, 8, 64, shmring.CRC32C)
	const n = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; {
			if err := r.Push(fmt.Appendf(nil, "message %d", i)); errors.Is(err, shmring.ErrFull) {
				continue
			} else if err != nil {
				t.Error(err)
				return
			}
			i++
		}
	}()
	var buf []byte
	for i := 0; i < n; {
		got, err := r.Read(buf)
		if errors.Is(err, shmring.ErrEmpty) {
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := fmt.Sprintf("message %d", i); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		buf = got
		r.Advance(1, false)
		i++
	}
	wg.Wait()
}

// drain reads a ring as the tuner goroutine would, skipping whatever is
// bad, and stops within a bounded number of steps.
func drain(r *shmring.Ring) {
	var buf []byte
	for range 64 {
		got, err := r.Read(buf)
		var se *shmring.SlotError
		switch {
		case err == nil:
			buf = got
			r.Advance(1, false)
		case errors.As(err, &se) && se.Kind == shmring.Overrun:
			r.Advance(se.Lost, true)
		case errors.As(err, &se):
			r.Advance(1, true)
		default:
			return
		}
	}
}

func FuzzOpenRead(f *testing.F) {
	_, b := newRing(f, 3, 32, shmring.CRC32C)
	r, _ := shmring.Open(b)
	r.Push([]byte("abc"))
	f.Add(append([]byte(nil), b...))
	f.Add([]byte("REACTRNG"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := region(len(data))
		copy(b, data)
		r, err := shmring.Open(b)
		if err != nil {
			return
		}
		drain(r)
	})
}

// FuzzSlots fuzzes the bytes of the slots and the head of a valid ring.
func FuzzSlots(f *testing.F) {
	f.Add(uint64(1), []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3, 4, 'a', 'b', 'c'})
	f.Add(uint64(9), []byte{})
	f.Fuzz(func(t *testing.T, head uint64, slots []byte) {
		r, b := newRing(t, 3, 32, shmring.CRC32C)
		copy(b[shmring.HeaderSize:], slots)
		binary.LittleEndian.PutUint64(b[64:], head)
		drain(r)
		if r.Tail() > head {
			t.Fatalf("tail %d past head %d", r.Tail(), head)
		}
	})
}

func BenchmarkPushRead(b *testing.B) {
	r, _ := newRing(b, 64, 8192, shmring.CRC32C)
	msg := make([]byte, 5500) // an FCT batch of 6 epochs x 112 flows
	buf := make([]byte, 0, len(msg))
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := r.Push(msg); err != nil {
			b.Fatal(err)
		}
		got, err := r.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		buf = got
		r.Advance(1, false)
	}
}
