// Package pyrandom reproduces CPython's random.Random bit for bit: the
// MT19937 generator seeded from an int as Modules/_randommodule.c seeds it
// (init_by_array over the 32-bit words of abs(seed)), random(),
// getrandbits(), and Lib/random.py's _randbelow_with_getrandbits, sample()
// and shuffle() (unchanged from CPython 3.10 through 3.13). It exists so
// that a choice lm-evaluation-harness makes with random.Random(1234) (its
// few-shot sampler) is made identically in Go.
package pyrandom

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// Random is one random.Random instance. It is not safe for concurrent use.
type Random struct {
	mt  [n]uint32
	mti int
}

// New returns random.Random(seed) for an int seed.
func New(seed int64) *Random {
	return NewBig(big.NewInt(seed))
}

// NewBig returns random.Random(seed) for an int seed of any size.
func NewBig(seed *big.Int) *Random {
	r := &Random{}
	a := new(big.Int).Abs(seed)
	// The key is abs(seed) as little-endian 32-bit words, at least one.
	var key []uint32
	words := a.Bits()
	for _, w := range words {
		for i := 0; i < bits.UintSize/32; i++ {
			key = append(key, uint32(uint64(w)>>(32*i)))
		}
	}
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r.initByArray(key)
	return r
}

func (r *Random) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < n; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = n
}

func (r *Random) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// Uint32 is genrand_uint32: the generator's next 32-bit output.
func (r *Random) Uint32() uint32 {
	if r.mti >= n {
		mag := [2]uint32{0, matrixA}
		var kk int
		for kk = 0; kk < n-m; kk++ {
			y := (r.mt[kk] & upperMask) | (r.mt[kk+1] & lowerMask)
			r.mt[kk] = r.mt[kk+m] ^ (y >> 1) ^ mag[y&1]
		}
		for ; kk < n-1; kk++ {
			y := (r.mt[kk] & upperMask) | (r.mt[kk+1] & lowerMask)
			r.mt[kk] = r.mt[kk+(m-n)] ^ (y >> 1) ^ mag[y&1]
		}
		y := (r.mt[n-1] & upperMask) | (r.mt[0] & lowerMask)
		r.mt[n-1] = r.mt[m-1] ^ (y >> 1) ^ mag[y&1]
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Float64 is random(): a float in [0, 1) with 53 random bits.
func (r *Random) Float64() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// GetRandBits is getrandbits(k) for 0 <= k <= 64: the words are drawn
// least significant first, and the last is cut to its top bits.
func (r *Random) GetRandBits(k int) uint64 {
	switch {
	case k < 0 || k > 64:
		panic(fmt.Sprintf("pyrandom: GetRandBits(%d) outside [0, 64]", k))
	case k == 0:
		return 0
	case k <= 32:
		return uint64(r.Uint32() >> (32 - k))
	}
	lo := uint64(r.Uint32())
	hi := uint64(r.Uint32() >> (64 - k))
	return hi<<32 | lo
}

// RandBelow is _randbelow_with_getrandbits(n): an int in [0, n) drawn by
// rejection from n.bit_length() random bits. n must be positive.
func (r *Random) RandBelow(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("pyrandom: RandBelow(%d)", n))
	}
	k := bits.Len64(uint64(n))
	v := r.GetRandBits(k)
	for v >= uint64(n) {
		v = r.GetRandBits(k)
	}
	return int(v)
}

// Sample is random.sample(range(n), k): k distinct indices into a
// population of n, in the order chosen. CPython picks from a shrinking
// pool when n is small next to k and by rejection from a set otherwise;
// both are reproduced. k outside [0, n] is an error, as Python's
// ValueError ("Sample larger than population or is negative").
func (r *Random) Sample(n, k int) ([]int, error) {
	if k < 0 || k > n {
		return nil, fmt.Errorf("sample of %d from a population of %d: Sample larger than population or is negative", k, n)
	}
	result := make([]int, k)
	setsize := 21
	if k > 5 {
		setsize += int(math.Pow(4, math.Ceil(math.Log(float64(k*3))/math.Log(4))))
	}
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := r.RandBelow(n - i)
			result[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return result, nil
	}
	selected := make(map[int]bool, k)
	for i := 0; i < k; i++ {
		j := r.RandBelow(n)
		for selected[j] {
			j = r.RandBelow(n)
		}
		selected[j] = true
		result[i] = j
	}
	return result, nil
}

// Shuffle is random.shuffle on a sequence of n items: swap(i, j) is called
// as CPython's loop swaps x[i] and x[j].
func (r *Random) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := r.RandBelow(i + 1)
		swap(i, j)
	}
}
