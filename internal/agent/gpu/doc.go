// Package gpu discovers the GPUs of a host for the node agent: through
// NVML (github.com/NVIDIA/go-nvml), by running nvidia-smi, or from a
// declaration of virtual GPUs ("virtual:8xH100-80GB") for hosts without
// them. Every way returns the same Device list; parsers return errors that
// name the line and column at fault.
package gpu
