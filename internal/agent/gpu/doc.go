// Package gpu discovers the GPUs of a host for the node agent: through
// NVML (github.com/NVIDIA/go-nvml), by running nvidia-smi, or from a
// declaration of virtual GPUs ("virtual:8xH100-80GB") for hosts without
// them. Every way returns the same Device list, each GPU with the minor
// number of its device node /dev/nvidiaN (NVML's; for nvidia-smi, the
// driver's own description under /proc/driver/nvidia/gpus), which the
// agent gives a container rather than assuming it equals the index.
// Parsers return errors that name the line and column (or field) at
// fault. Health reads what is wrong with the GPUs (NVMLHealth: a GPU
// gone, ECC errors, pending retirements and remaps, critical XIDs) for
// the agent's health checks.
package gpu
