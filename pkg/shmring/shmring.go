// Package shmring is the layout of the shared-memory ring that carries FCT
// batches from the runtime (Python, C) to the tuner goroutine, and the
// writer's and the reader's side of its protocol, as functions over the
// region's bytes. The region belongs to the caller; this package neither
// allocates nor maps it.
//
// One writer and one reader. The writer owns head and the slots it has not
// published; the reader owns tail and rejected. A slot is published by
// storing its sequence number after its contents, then head after the
// slot; the reader trusts nothing else. A slot whose sequence number, length
// or checksum is wrong is reported as a *SlotError and can be skipped: one
// bad slot never stops the ring.
//
// # Layout
//
// All integers little-endian; head, tail, rejected and every slot's seq are
// 8-byte aligned and accessed atomically.
//
//	offset size field
//	0      8    magic "REACTRNG" (the ASCII bytes, in this order)
//	8      4    version, 1
//	12     4    header size, 192: the offset of slot 0
//	16     4    slot count S, >= 1
//	20     4    slot size Z in bytes, a multiple of 8, 24 <= Z <= 1 GiB
//	24     4    checksum: 1 CRC-32C (Castagnoli), 2 CRC-32 (IEEE, zlib.crc32)
//	28     36   reserved, zero
//	64     8    head: messages published so far (writer)
//	72     56   reserved, zero
//	128    8    tail: messages consumed so far (reader)
//	136    8    rejected: slots the reader refused (reader)
//	144    48   reserved, zero
//	192    S*Z  slots; message n lives in slot n mod S, at 192 + (n mod S)*Z
//
// A slot:
//
//	0      8    seq: n+1 for message n (0: never written)
//	8      4    len: payload bytes, <= Z-16
//	12     4    checksum of the payload bytes
//	16     len  payload (an FCT batch in msgpack, see package wire)
package shmring

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"unsafe"
)

// Layout constants; see the package doc.
const (
	Magic       = "REACTRNG"
	Version     = 1
	HeaderSize  = 192
	SlotHeader  = 16
	MinSlotSize = SlotHeader + 8
	MaxSlotSize = 1 << 30
	MaxSlots    = 1 << 24

	offVersion    = 8
	offHeaderSize = 12
	offSlots      = 16
	offSlotSize   = 20
	offChecksum   = 24
	offHead       = 64
	offTail       = 128
	offRejected   = 136

	slotSeq = 0
	slotLen = 8
	slotSum = 12
)

// Checksum names the checksum a ring's slots carry.
type Checksum uint32

// The checksums a ring may use. CRC-32C is the default; CRC-32 (IEEE) is
// there for writers whose standard library has only zlib's.
const (
	CRC32C Checksum = 1
	CRC32  Checksum = 2
)

func (c Checksum) table() *crc32.Table {
	switch c {
	case CRC32C:
		return crc32.MakeTable(crc32.Castagnoli) // cached by hash/crc32
	case CRC32:
		return crc32.IEEETable
	}
	return nil
}

func (c Checksum) String() string {
	switch c {
	case CRC32C:
		return "crc32c"
	case CRC32:
		return "crc32"
	}
	return fmt.Sprintf("checksum(%d)", uint32(c))
}

// Error is a condition of the ring as a whole; a constant, so that it can be
// compared with errors.Is without a package variable.
type Error string

func (e Error) Error() string { return string(e) }

// The ring's conditions.
const (
	ErrEmpty    Error = "shmring: ring empty"
	ErrFull     Error = "shmring: ring full"
	ErrTooLarge Error = "shmring: payload larger than a slot"
)

// HeaderError says the region is not a ring this package can use, or that
// its head or tail can no longer be trusted.
type HeaderError struct{ Detail string }

func (e *HeaderError) Error() string { return "shmring: bad ring header: " + e.Detail }

// SlotKind classifies a bad slot.
type SlotKind int

// The ways a slot can be bad.
const (
	// Torn: the slot's sequence number is not that of the message head
	// says is there (never written, half written, or overwritten).
	Torn SlotKind = iota + 1
	// Truncated: the slot announces more payload than it can hold.
	Truncated
	// Corrupt: the payload does not match its checksum.
	Corrupt
	// Overrun: the writer published past the reader by more than the ring
	// holds; Lost messages were overwritten unread.
	Overrun
)

func (k SlotKind) String() string {
	switch k {
	case Torn:
		return "torn"
	case Truncated:
		return "truncated"
	case Corrupt:
		return "corrupt"
	case Overrun:
		return "overrun"
	}
	return fmt.Sprintf("SlotKind(%d)", int(k))
}

// SlotError reports a bad slot (or, for Overrun, lost messages). The reader
// skips it with Advance(1, true) (Advance(Lost, true) for Overrun).
type SlotError struct {
	Seq    uint64 // message number at the tail
	Kind   SlotKind
	Lost   uint64 // Overrun only
	Detail string
}

func (e *SlotError) Error() string {
	return fmt.Sprintf("shmring: message %d: %s slot: %s", e.Seq, e.Kind, e.Detail)
}

// Size returns the bytes a ring of slots slots of slotSize bytes occupies.
func Size(slots, slotSize uint32) (int, error) {
	if err := checkGeometry(slots, slotSize); err != nil {
		return 0, err
	}
	return HeaderSize + int(slots)*int(slotSize), nil
}

func checkGeometry(slots, slotSize uint32) error {
	switch {
	case slots < 1 || slots > MaxSlots:
		return &HeaderError{fmt.Sprintf("slot count %d, want 1 to %d", slots, MaxSlots)}
	case slotSize < MinSlotSize || slotSize > MaxSlotSize || slotSize%8 != 0:
		return &HeaderError{fmt.Sprintf("slot size %d, want a multiple of 8 from %d to %d", slotSize, MinSlotSize, MaxSlotSize)}
	}
	return nil
}

// Ring is a view of a ring region. The geometry is read once, by Open or
// Format, so that a writer scribbling on the header later cannot send the
// reader outside the region.
type Ring struct {
	b        []byte
	slots    uint64
	slotSize int
	sum      Checksum
	table    *crc32.Table
}

// Format writes an empty ring's header into b and zeroes its slots.
func Format(b []byte, slots, slotSize uint32, sum Checksum) (*Ring, error) {
	size, err := Size(slots, slotSize)
	if err != nil {
		return nil, err
	}
	if sum.table() == nil {
		return nil, &HeaderError{fmt.Sprintf("checksum %d, want 1 (crc32c) or 2 (crc32)", uint32(sum))}
	}
	if len(b) < size {
		return nil, &HeaderError{fmt.Sprintf("region of %d bytes, %d slots of %d bytes need %d", len(b), slots, slotSize, size)}
	}
	if err := checkAlign(b); err != nil {
		return nil, err
	}
	clear(b[:size])
	copy(b, Magic)
	le := binary.LittleEndian
	le.PutUint32(b[offVersion:], Version)
	le.PutUint32(b[offHeaderSize:], HeaderSize)
	le.PutUint32(b[offSlots:], slots)
	le.PutUint32(b[offSlotSize:], slotSize)
	le.PutUint32(b[offChecksum:], uint32(sum))
	return Open(b)
}

func checkAlign(b []byte) error {
	if len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		return &HeaderError{fmt.Sprintf("region at %p is not 8-byte aligned", &b[0])}
	}
	return nil
}

// Open checks the header of the ring in b and returns a view of it.
func Open(b []byte) (*Ring, error) {
	if len(b) < HeaderSize {
		return nil, &HeaderError{fmt.Sprintf("region of %d bytes, the header alone needs %d", len(b), HeaderSize)}
	}
	if err := checkAlign(b); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if string(b[:8]) != Magic {
		return nil, &HeaderError{fmt.Sprintf("magic %q, want %q", b[:8], Magic)}
	}
	if v := le.Uint32(b[offVersion:]); v != Version {
		return nil, &HeaderError{fmt.Sprintf("version %d, want %d", v, Version)}
	}
	if h := le.Uint32(b[offHeaderSize:]); h != HeaderSize {
		return nil, &HeaderError{fmt.Sprintf("header size %d, want %d", h, HeaderSize)}
	}
	slots, slotSize := le.Uint32(b[offSlots:]), le.Uint32(b[offSlotSize:])
	size, err := Size(slots, slotSize)
	if err != nil {
		return nil, err
	}
	if len(b) < size {
		return nil, &HeaderError{fmt.Sprintf("region of %d bytes, its %d slots of %d bytes need %d", len(b), slots, slotSize, size)}
	}
	sum := Checksum(le.Uint32(b[offChecksum:]))
	if sum.table() == nil {
		return nil, &HeaderError{fmt.Sprintf("checksum %d, want 1 (crc32c) or 2 (crc32)", uint32(sum))}
	}
	return &Ring{b: b[:size:size], slots: uint64(slots), slotSize: int(slotSize), sum: sum, table: sum.table()}, nil
}

// Slots returns the slot count.
func (r *Ring) Slots() int { return int(r.slots) }

// SlotSize returns the bytes of one slot, its 16-byte header included.
func (r *Ring) SlotSize() int { return r.slotSize }

// MaxPayload returns the largest payload a slot holds.
func (r *Ring) MaxPayload() int { return r.slotSize - SlotHeader }

// Checksum returns the ring's checksum kind.
func (r *Ring) Checksum() Checksum { return r.sum }

func (r *Ring) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.b[off])) }

// Head returns the number of messages published.
func (r *Ring) Head() uint64 { return atomic.LoadUint64(r.word(offHead)) }

// Tail returns the number of messages consumed.
func (r *Ring) Tail() uint64 { return atomic.LoadUint64(r.word(offTail)) }

// Rejected returns the number of slots the reader refused.
func (r *Ring) Rejected() uint64 { return atomic.LoadUint64(r.word(offRejected)) }

func (r *Ring) slot(n uint64) int { return HeaderSize + int(n%r.slots)*r.slotSize }

// Push publishes payload as the next message (writer side).
func (r *Ring) Push(payload []byte) error {
	if len(payload) > r.MaxPayload() {
		return fmt.Errorf("%w: %d bytes, a slot holds %d", ErrTooLarge, len(payload), r.MaxPayload())
	}
	n, t := r.Head(), r.Tail()
	if n < t {
		return &HeaderError{fmt.Sprintf("head %d behind tail %d", n, t)}
	}
	if n-t >= r.slots {
		return ErrFull
	}
	s := r.slot(n)
	le := binary.LittleEndian
	le.PutUint32(r.b[s+slotLen:], uint32(len(payload)))
	le.PutUint32(r.b[s+slotSum:], crc32.Checksum(payload, r.table))
	copy(r.b[s+SlotHeader:], payload)
	atomic.StoreUint64(r.word(s+slotSeq), n+1)
	atomic.StoreUint64(r.word(offHead), n+1)
	return nil
}

// Read copies the message at the tail into dst (grown when short) and
// returns it, without consuming it: the reader calls Advance when done. It
// returns ErrEmpty when nothing is published, a *SlotError for a bad slot
// and a *HeaderError when head and tail make no sense.
func (r *Ring) Read(dst []byte) ([]byte, error) {
	t, h := r.Tail(), r.Head()
	switch {
	case h == t:
		return dst[:0], ErrEmpty
	case h < t:
		return dst[:0], &HeaderError{fmt.Sprintf("head %d behind tail %d", h, t)}
	case h-t > r.slots:
		lost := h - t - r.slots
		return dst[:0], &SlotError{Seq: t, Kind: Overrun, Lost: lost,
			Detail: fmt.Sprintf("head %d is %d past tail %d in a ring of %d slots: %d messages overwritten", h, h-t, t, r.slots, lost)}
	}
	s := r.slot(t)
	seq := atomic.LoadUint64(r.word(s + slotSeq))
	if seq != t+1 {
		return dst[:0], &SlotError{Seq: t, Kind: Torn, Detail: fmt.Sprintf("sequence %d, want %d", seq, t+1)}
	}
	le := binary.LittleEndian
	n := int(le.Uint32(r.b[s+slotLen:]))
	if n > r.MaxPayload() {
		return dst[:0], &SlotError{Seq: t, Kind: Truncated, Detail: fmt.Sprintf("length %d, a slot holds %d", n, r.MaxPayload())}
	}
	want := le.Uint32(r.b[s+slotSum:])
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	copy(dst, r.b[s+SlotHeader:])
	if again := atomic.LoadUint64(r.word(s + slotSeq)); again != seq {
		return dst[:0], &SlotError{Seq: t, Kind: Torn, Detail: fmt.Sprintf("sequence changed from %d to %d while reading", seq, again)}
	}
	if got := crc32.Checksum(dst, r.table); got != want {
		return dst[:0], &SlotError{Seq: t, Kind: Corrupt, Detail: fmt.Sprintf("%s 0x%08x, the slot says 0x%08x (%d bytes)", r.sum, got, want, n)}
	}
	return dst, nil
}

// Advance consumes n messages at the tail (reader side), counting them as
// rejected when rejected is set.
func (r *Ring) Advance(n uint64, rejected bool) {
	if rejected {
		atomic.AddUint64(r.word(offRejected), n)
	}
	atomic.AddUint64(r.word(offTail), n)
}
