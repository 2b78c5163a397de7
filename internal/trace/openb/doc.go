// Package openb reads the openb traces of the FGD paper (ATC'23): the node
// list (`sn,cpu_milli,memory_mib,gpu,model`) and the pod list
// (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
// creation_time,deletion_time,scheduled_time]`) as shipped in
// data/traces/openb.
//
// Readers locate columns by header name, so column order and trailing
// optional columns may vary. Every error names the file, the line (1-based,
// the header is line 1) and the column. The package does no scheduling: it
// returns plain structs that callers turn into requests and nodes.
//
// WritePods writes a pod list that ReadPods reads back unchanged. Variant
// derives the FGD paper's workload families (gpushare, gpuspec, multigpu,
// cpu) from a pod list: pure and deterministic for a seed, each family's
// share within one pod of the percentage asked; inputs it cannot honour are
// errors wrapping ErrVariant that name the field.
package openb
