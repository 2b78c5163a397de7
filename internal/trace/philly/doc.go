// Package philly reads the Microsoft Philly trace as reduced by the Sia
// (SOSP'23) artifact and shipped in data/traces/philly:
//
//   - philly_jobs.csv: `timestamp,duration,num_gpus,gpu_time,cluster`, one
//     job a row: submit time (UTC, "2006-01-02 15:04:05"), run time in
//     seconds, GPUs, GPU-seconds, and the virtual cluster (tenant) it was
//     submitted to;
//   - philly_vc.csv: `vc,node num`, the nodes each virtual cluster owns (from
//     the Helios artifact, SC'21).
//
// Readers locate columns by header name and skip blank lines (the jobs file
// ends with one). Every error wraps ErrFormat and names the file, the line
// and the column as file:line:column (1-based; the header is line 1). The
// package does no scheduling: it returns plain structs, in file order.
package philly
