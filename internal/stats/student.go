package stats

import "math"

// z975 is the 0.975 quantile of the standard normal distribution.
var z975 = math.Sqrt2 * math.Erfinv(0.95)

// expansionDF is the number of degrees of freedom from which tQuantile975
// uses the Cornish–Fisher expansion instead of inverting the distribution.
const expansionDF = 1000

// maxFractionTerms bounds the terms of the incomplete beta function's
// continued fraction. Below expansionDF degrees of freedom it needs a few
// hundred at most.
const maxFractionTerms = 10000

// TQuantile975 returns the 0.975 quantile of Student's t distribution with
// df degrees of freedom: the factor of the standard error in a two-sided
// 95 % interval. It is NaN for df < 1.
func TQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	return tQuantile975(float64(df))
}

// tQuantile975 is TQuantile975 for any positive, possibly fractional, df.
func tQuantile975(df float64) float64 {
	if !(df > 0) {
		return math.NaN()
	}
	if df >= expansionDF {
		return tExpansion975(df)
	}
	// The quantile is above the normal one; double until the tail is
	// below 2.5 %, then halve the bracket until it is as narrow as
	// float64 allows.
	lo, hi := z975, 2*z975
	for studentTail(hi, df) > 0.025 {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return hi
		}
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if studentTail(mid, df) > 0.025 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// tExpansion975 is the Cornish–Fisher expansion of the 0.975 quantile of t
// in powers of 1/df, to the fourth (Abramowitz and Stegun 26.7.5).
func tExpansion975(df float64) float64 {
	z := z975
	z2 := z * z
	g1 := z * (z2 + 1) / 4
	g2 := z * ((5*z2+16)*z2 + 3) / 96
	g3 := z * (((3*z2+19)*z2+17)*z2 - 15) / 384
	g4 := z * ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) / 92160
	v := 1 / df
	return z + v*(g1+v*(g2+v*(g3+v*g4)))
}

// studentTail returns P(T > t) for t ≥ 0 under Student's t with df
// degrees of freedom: ½·I(x; df/2, ½) with x = df/(df+t²). Both x and
// 1−x are formed directly, so neither loses digits to the other.
func studentTail(t, df float64) float64 {
	t2 := t * t
	x := df / (df + t2)
	y := t2 / (df + t2)
	return betaInc(df/2, 0.5, x, y) / 2
}

// betaInc returns the regularized incomplete beta function I(x; a, b) for
// a, b > 0 and x in [0, 1], given y = 1−x as well. The continued fraction
// converges fast below its mean-like point (a+1)/(a+b+2); above it the
// symmetry I(x; a, b) = 1 − I(1−x; b, a) is used.
func betaInc(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - betaInc(b, a, y, x)
	}
	lga, _ := math.Lgamma(a)
	lgb, _ := math.Lgamma(b)
	lgab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log(y) - (lga + lgb - lgab))
	return front / a * betaFraction(a, b, x)
}

// betaFraction evaluates the continued fraction
//
//	1/(1+ d1/(1+ d2/(1+ …)))
//
// of the incomplete beta function (DLMF §8.17(v)), with
//
//	d(2m+1) = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1))
//	d(2m)   = m(b−m)x / ((a+2m−1)(a+2m))
//
// by the modified Lentz method: the convergents are carried as the ratios
// C = A(n)/A(n−1) and D = B(n−1)/B(n), with tiny values standing in for
// zeros.
func betaFraction(a, b, x float64) float64 {
	const tiny = 1e-300
	guard := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	// g = 1 + d1/(1+ d2/(1+ …)); the fraction is 1/g.
	g, c, d := 1.0, 1.0, 0.0
	for m := 1; m <= maxFractionTerms; m++ {
		var coef float64
		if k := float64(m / 2); m%2 == 1 {
			coef = -(a + k) * (a + b + k) * x / ((a + 2*k) * (a + 2*k + 1))
		} else {
			coef = k * (b - k) * x / ((a + 2*k - 1) * (a + 2*k))
		}
		d = 1 / guard(1+coef*d)
		c = guard(1 + coef/c)
		g *= c * d
		if math.Abs(c*d-1) < 1e-16 {
			break
		}
	}
	return 1 / g
}
