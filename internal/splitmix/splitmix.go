// Package splitmix is SplitMix64 (Steele, Lea and Flood 2014), the hash
// that the topology's ECMP choices, the simulator's port draws and the
// scenarios' noise streams share: one copy, so that the engines agree.
package splitmix

// Golden is SplitMix64's increment: 2^64 over the golden ratio.
const Golden = 0x9e3779b97f4a7c15

// Mix is SplitMix64's finaliser: it spreads nearby inputs apart.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Next is one step of the generator from state x: the state advanced by
// Golden, then mixed.
func Next(x uint64) uint64 { return Mix(x + Golden) }
