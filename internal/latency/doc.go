// Package latency is the histogram that the gateway measures request
// latencies with and that the server merges across gateways: fixed
// logarithmic buckets, so that two histograms add bucket by bucket and a
// quantile of the sum is as exact as a quantile of either.
//
// The buckets: bucket 0 holds every latency up to Min (50 µs); bucket i ≥ 1
// holds (Min·Growth^(i−1), Min·Growth^i], with Growth 1.08; the last
// bucket, Buckets−1, holds everything above Min·Growth^(Buckets−2) (about
// 12 minutes). A quantile is the upper bound of the bucket that holds it
// (so at most 8 % above the true value, never below it: a p95 read from
// the histogram errs towards breaking the SLO, not towards hiding a
// breach).
//
// A Histogram travels as its non-empty buckets (Sparse), which a gateway
// posts and the server validates (FromSparse names the field at fault).
// The package does no I/O and reads no clock.
package latency
