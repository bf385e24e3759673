package sacrebleu

import (
	"math"
	"math/big"
	"sync"
)

// crPrec is the working precision of crExp and crLog: far past what
// rounding to a float64 needs for every argument but ones within 2^-140
// of a rounding boundary.
const crPrec = 200

func bigf() *big.Float { return new(big.Float).SetPrec(crPrec) }

// atanh2 is 2·atanh(z) = 2 Σ z^(2k+1)/(2k+1), for |z| ≤ 1/3.
func atanh2(z *big.Float) *big.Float {
	z2 := bigf().Mul(z, z)
	term := bigf().Set(z)
	sum := bigf().Set(z)
	eps := bigf().SetMantExp(big.NewFloat(1), -crPrec-8)
	for k := int64(1); ; k++ {
		term.Mul(term, z2)
		t := bigf().Quo(term, bigf().SetInt64(2*k+1))
		sum.Add(sum, t)
		if t.Sign() == 0 || bigf().Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, bigf().SetInt64(2))
}

// ln2 is log 2 at crPrec bits (2·atanh(1/3)).
var ln2 = sync.OnceValue(func() *big.Float {
	return atanh2(bigf().Quo(bigf().SetInt64(1), bigf().SetInt64(3)))
})

// crLog is math.log correctly rounded: x = m·2^e with m in [√½, √2),
// log x = e·log 2 + 2·atanh((m-1)/(m+1)) at crPrec bits, rounded once.
func crLog(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return math.Log(x)
	}
	if x == 1 {
		return 0
	}
	m, e := math.Frexp(x)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	bm := bigf().SetFloat64(m)
	r := atanh2(bigf().Quo(bigf().Sub(bm, bigf().SetInt64(1)), bigf().Add(bm, bigf().SetInt64(1))))
	r.Add(r, bigf().Mul(bigf().SetInt64(int64(e)), ln2()))
	f, _ := r.Float64()
	return f
}

// crExp is math.exp correctly rounded: x = k·log 2 + r, exp r by its
// series on r/2^8 squared 8 times, at crPrec bits, rounded once.
func crExp(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x > 709.8 || x < -745.2 {
		return math.Exp(x)
	}
	if x == 0 {
		return 1
	}
	bx := bigf().SetFloat64(x)
	kf, _ := bigf().Quo(bx, ln2()).Float64()
	k := math.Round(kf)
	r := bigf().Sub(bx, bigf().Mul(bigf().SetFloat64(k), ln2()))
	const halvings = 8
	r.SetMantExp(r, -halvings)
	term, sum := bigf().SetInt64(1), bigf().SetInt64(1)
	eps := bigf().SetMantExp(big.NewFloat(1), -crPrec-8)
	for n := int64(1); ; n++ {
		term.Mul(term, r)
		term.Quo(term, bigf().SetInt64(n))
		sum.Add(sum, term)
		if term.Sign() == 0 || bigf().Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for range halvings {
		sum.Mul(sum, sum)
	}
	sum.SetMantExp(sum, int(k))
	f, _ := sum.Float64()
	return f
}
