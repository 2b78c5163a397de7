// Package report writes the plots of simulation runs as PNG files with
// gonum/plot, and an index.html that shows them with a table of figures, so
// a run can be read in a browser. It knows nothing of the simulator: callers
// hand it Runs of plain numbers.
package report
