package wire

// The exchange: once per batch every rank of a group sends the leader one
// float64 vector, per key and per epoch of its records a row of
// ExchangeRowLen(flows, ranks) values in the pattern's order:
//
//	[0, F)          the flow's arrival, on the receiving rank; -Inf on every other rank
//	F               the epoch's elapsed time on this rank
//	F+1 .. F+R      the ranks' entries on the group clock; -Inf but this rank's
//
// Every flow has one receiver and every entry slot one rank, so the
// element-wise maximum over the ranks is the epoch's whole record (and the
// slowest rank's elapsed time). The leader gets it by a MAX reduction, not
// a gather: it receives O(flows) per exchange, not O(ranks x flows).

// ExchangeRowLen is the length of one epoch's row in an exchange.
func ExchangeRowLen(flows, ranks int) int { return flows + 1 + ranks }
