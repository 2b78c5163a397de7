// Package stats summarises repeated runs: the mean of a measure over seeds
// with a 95 % confidence interval, the ratio of two such means, the share
// of runs that passed, and the parsers for the seed and scale lists that
// drive the repetitions.
//
// The model, with its sources:
//
//   - Summarize takes N independent values, their mean and their sample
//     standard deviation s (N−1 in the denominator), and the half-width of
//     the two-sided 95 % interval of the mean, t(0.975, N−1)·s/√N, which
//     is exact for normally distributed values and close for means of
//     well-behaved ones (Student, 1908). With no values the mean is NaN and
//     the other fields are zero; with one value s is reported as 0 and the
//     half-width is +Inf: one run says nothing about its spread.
//   - TQuantile975 is the 0.975 quantile of Student's t, computed, not
//     tabulated: the t distribution's tail is half a regularized incomplete
//     beta function, P(T > t) = ½·I(ν/(ν+t²); ν/2, ½) (Abramowitz and
//     Stegun §26.7), evaluated by its continued fraction (DLMF §8.17(v),
//     summed by the modified Lentz method) and inverted by bisection. Above 1,000 degrees of freedom it uses the Cornish–Fisher
//     expansion of the quantile in powers of 1/ν (Abramowitz and Stegun
//     26.7.5), whose first omitted term is below 1e-13 there.
//   - RatioOfMeans is mean(a)/mean(b) for two independent samples, with
//     Fieller's 95 % interval (Fieller, 1954): the r for which
//     mean(a) − r·mean(b) is not significantly different from zero, with
//     Student's t at the Welch–Satterthwaite degrees of freedom of that
//     difference taken at the point estimate (Welch, 1947). Unlike the
//     delta method the interval is not symmetric about the ratio (it is
//     wider above when the denominator may be smaller than it looks), and
//     when mean(b) is not significantly different from zero it is
//     unbounded, (−Inf, +Inf), which is the honest answer.
//   - PassRate is the share of true values with Wilson's score interval
//     (Wilson, 1927), which, unlike p ± z·√(p(1−p)/n), stays within [0, 1]
//     and does not collapse to a point when every run passed or failed.
//   - Quantile is the nearest-rank quantile of sorted values, the one the
//     simulator's and the demo's reports use: the value at index
//     ⌈q·n⌉−1, clamped to the slice.
//
// ParseRange and ParseFloats read the command-line lists ("1-10",
// "1,3,5-7"; "0.6,0.8,1.0"); their errors are plain sentences that quote
// the offending element, for the caller to prefix with the flag's name.
//
// The package does no I/O, reads no clock, draws no random number and
// keeps no mutable state; it imports only the standard library
// (purity_test.go holds it to that). Every function is safe to call from
// several goroutines.
package stats
