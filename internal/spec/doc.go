// Package spec reads the YAML files a person writes — the fleet, the
// tenants, jobs — into the types of package model, and checks them with
// model's Validate methods.
//
// Every problem is an *Error that names the file, the line and column, and
// the field as written in the file ("regions[1].clusters[0].fabric"):
// syntax errors, unknown fields, values of the wrong type, and the semantic
// errors of model validation, whose field paths are mapped back onto the
// YAML node tree. A value that came from a --set override is named by the
// override ("--set retry.max_retries") instead of a line. No input makes the
// readers panic; fuzz tests hold them to that.
//
// Field names are snake_case. Units as a person writes them are converted
// to model's units: kW to watts (power_kw, power_cap_kw, power_headroom_kw),
// cores or "500m" to milli-cores (cpu), "512Mi", "64Gi", "1Ti" or an
// integer of MiB to MiB (memory), Go durations ("90s", "2h30m"; no days) to
// time.Duration, RFC 3339 times or dates to time.Time.
//
// A fleet file lists extra SKUs (skus, added to model.BuiltinCatalog) and
// regions → clusters → racks → nodes; a node's region, cluster and rack are
// where it is nested. A node entry is one node (name) or a run of alike
// nodes (prefix, count and optionally start, default 1), named prefix plus
// the index zero-padded to two digits or more ("eastus-h100-01"). health
// defaults to Ready. prices lists an SKU's prices in one region (sku,
// region, on_demand, reserved_1y, reserved_3y, spot_floor; a rate left out
// is the catalog's, package price).
//
// A tenants file lists partitions (with guarantees of GPUs, or percent of a
// region's GPUs of one model), tenants (a tenant may have a budget:
// usd_per_month and hard_stop), quotas and reservations, and may name
// the fleet's sharing strategy (strategy: static, dynamic or hybrid; left
// out, the tenancy is used as written; docs/strategies.md).
//
// A jobs file holds one or more YAML documents separated by "---", each a
// job or a list of jobs; JSON is read the same way, so the API accepts the
// same documents. Absent fields take defaults: instance_count 1 (an
// elastic job's min_instances), gpus_per_instance 1 (an explicit 0 asks for
// no GPU), priority standard. elastic: {min_instances, max_instances, step}
// lets a gang run with more instances than it waits for (model.Elastic);
// an instance_count that is written must equal min_instances. A
// command given as a string runs as /bin/sh -c string. Overrides (--set
// key=value, the key a dotted path such as retry.max_retries or env.NAME,
// the value parsed as YAML) are applied to the node tree of each job before
// it is read; an empty value resets the field to its default. A job with
// array: A-B[:STEP] (or a list, 1,5,9; model.ParseArray) stands for one job
// per index, named NAME[IDX] with array_index IDX; a file expands to at
// most MaxJobs jobs. after: (a list, or one name) lists the jobs a job
// waits for, by name within the file or by job ID; jobs of one file that
// wait for each other in a circle are refused, the error at the after: of
// the first of them, naming the circle (model.AfterCycle). Names that match
// no job of the file are left for the server to resolve.
//
// A read reports every problem of its files at once (at most MaxErrors):
// every field of every job of every document and file, each an *Error
// (Errors lists them); a field whose value could not be read is not also
// reported by validation. An unknown field or --set key, and an
// enum-like value (priority class, interconnect), names the nearest valid
// one (model.Nearest).
//
// An endpoints file holds inference endpoints the same way (documents, lists
// or JSON): a job's fields without instance_count, retry, checkpoint and
// duration, plus model, min_replicas, max_replicas, slo.p95_ms (a number of
// milliseconds) and throughput, a mapping of GPU models to the requests/s one
// replica sustains at the SLO. Defaults: gpus_per_instance 1, min_replicas 1,
// max_replicas min_replicas, priority standard, gpu_models the models of the
// throughput profile, and command allot demo serve.
//
// Partitions, tenants and jobs may carry labels (labels: {workload:
// batch}), by which operator policies select work. A policies file
// (ParsePolicies) lists scheduling_policies and the targets their actions
// name; percentages are written "85%", latencies and durations as Go
// durations ("150ms", "5m"). A metrics file (ParseRecording) holds recorded
// series to replay policies against. docs/policies.md describes both.
package spec
