// Package report writes the plots of simulation runs as PNG files with
// gonum/plot, and an index.html that shows them with a table of figures, so
// a run can be read in a browser. It knows nothing of the simulator: callers
// hand it Runs of plain numbers.
//
// Besides the plots of all runs together (utilisation, queueing delay), each
// run gets its tenants' use against their guarantees and, per inference
// endpoint, the p95 latency of every minute against the endpoint's SLO.
// A run without endpoints gets no latency plots and the page shows none.
package report
