// Package wire holds the two serial forms of a collective pattern
// (*ten.Pattern): JSON for people and tools, msgpack for the C ABI and
// Python. It knows formats only, nothing of what a pattern computes.
//
// Both decoders end with Pattern.Validate, and both encoders refuse a
// pattern that fails it, so whatever this package writes it can read back.
//
// # JSON
//
// The pattern contract of design.md, one flow per line:
//
//	{
//	  "format": "react.pattern/v1",
//	  "op": "allreduce",
//	  "algo": "tree",
//	  "ranks": 4,
//	  "root": -1,
//	  "flows": [
//	    {"chunk": 0, "step": 1, "src": 1, "dst": 0, "kind": "reduce", "fraction": 0.5},
//	    ...
//	  ]
//	}
//
// Every field shown is required; other fields are ignored. chunk, step,
// src, dst, ranks and root are integer literals (2.0 is refused); kind is
// "reduce" or "copy".
//
// # msgpack
//
// One msgpack map. Keys are strings; a reader must accept them in any order
// and skip keys it does not know (the encoder writes them in the order
// below). A key may appear only once.
//
//	"format"  str   "react.pattern/v1"
//	"op"      str   allreduce | allgather | reducescatter | broadcast | reduce
//	"algo"    str   the generator's name, e.g. "tree"
//	"ranks"   int   number of ranks N
//	"root"    int   root rank for broadcast and reduce, else -1
//	"nflows"  int   number of flows F
//	"flows"   map   column name -> column, one entry per flow field:
//	    "chunk"     dtype "<i4"  int32
//	    "step"      dtype "<i4"  int32, from 1
//	    "src"       dtype "<i4"  int32
//	    "dst"       dtype "<i4"  int32
//	    "kind"      dtype "|u1"  uint8: 1 reduce, 2 copy
//	    "fraction"  dtype "<f8"  float64 IEEE 754
//
// Every column is a map of three keys:
//
//	"dtype"  str   numpy's dtype string, exactly as above
//	"shape"  array one int, equal to nflows
//	"data"   bin   F * itemsize bytes, little-endian, no padding
//
// Flow i is row i of every column. Columns are bin, never arrays of numbers
// (those are 10 to 140 times slower to read); Python reads one with
// numpy.frombuffer(col["data"], dtype=col["dtype"]). Ints may use any msgpack
// integer encoding; the encoder writes the shortest. Unknown columns are
// skipped. The decoder refuses a wrong dtype, a shape other than [nflows],
// a data length other than nflows*itemsize, a missing column or header key,
// truncated input and bytes after the map, naming the key or column.
package wire

// Format is the format string both forms carry.
const Format = "react.pattern/v1"
