package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/agent/gpu"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// discovered is what 'allot agent discover -o json' prints.
type discovered struct {
	Way  string          `json:"way"` // NVML, nvidia-smi or virtual
	GPUs []discoveredGPU `json:"gpus"`
	// SKUs are the names of the SKUs this host can register as: the GPU
	// count and model the agent reports match theirs.
	SKUs []string `json:"skus"`
}

type discoveredGPU struct {
	Index int `json:"index"`
	// Minor is the N of the GPU's device node /dev/nvidiaN (-1: unknown).
	Minor     int    `json:"minor"`
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memory_mib"`
}

func newAgentDiscoverCmd() *cobra.Command {
	var gpus, fleetPath, node, output string
	cmd := &cobra.Command{
		Use:   "discover [--gpus auto|virtual:8xH100-80GB] [--fleet FILE] [--node NAME] [-o table|json|fleet]",
		Short: "Show the GPUs the agent would register on this host, and the SKUs they fit",
		Long: `discover finds this host's GPUs the way 'allot agent' does (NVML, else
nvidia-smi; or the virtual GPUs --gpus declares) and prints them with the
model allot gives each, then the SKUs whose GPU count and model they match:
the built-in catalog's and, with --fleet, the fleet file's own. The agent's
registration is refused unless the node's SKU in the fleet file is one of
them. It needs no server and changes nothing, as Slurm's 'slurmd -C'.

-o fleet prints a fleet file of this one host (node --node, default the host
name; region, cluster and rack "local"): with a matching built-in SKU it uses
it, else it declares one (--fleet aside) from what the host has (GPUs, their memory, CPUs,
memory; no prices: set them, or its GPU-hours cost nothing). Copy its SKU
and node into your fleet file, or serve it as it is to try allot on one
machine.`,
		Example: `  allot agent discover
  allot agent discover --fleet fleet.yaml
  allot agent discover -o fleet --node gpu-box-01 > fleet.yaml   # then: allot server --fleet fleet.yaml --agents external
  allot agent discover --gpus virtual:8xH100-80GB -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "fleet" {
				return Usage(fmt.Errorf("--output %q: want table, json or fleet", output))
			}
			catalog := model.BuiltinCatalog()
			if fleetPath != "" {
				fl, err := spec.ReadFleet(fleetPath)
				if err != nil {
					return err
				}
				catalog = fl.Catalog
			}
			if node == "" {
				node, _ = os.Hostname()
				if node == "" {
					node = "local-gpu-01"
				}
			}
			var d discovered
			var devs []gpu.Device
			if gpus == "auto" {
				var err error
				if devs, d.Way, err = gpu.DefaultAuto().DiscoverWay(cmd.Context()); err != nil {
					return fmt.Errorf("%w\n(a host without the NVIDIA driver can declare GPUs: --gpus virtual:8xH100-80GB)", err)
				}
			} else {
				v, err := gpu.ParseVirtual(gpus, node)
				if err != nil {
					return Usage(err)
				}
				devs, d.Way = v.Devices, "virtual"
			}
			for _, g := range devs {
				d.GPUs = append(d.GPUs, discoveredGPU{g.Index, g.Minor, g.UUID, g.Name, g.Model, g.MemoryMiB})
			}
			d.SKUs = fittingSKUs(catalog, devs)
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				return show(out, formatJSON, d, nil)
			case "fleet":
				// The file declares the SKU unless the built-in catalog has one.
				d.SKUs = fittingSKUs(model.BuiltinCatalog(), devs)
				return writeHostFleet(out, d, node)
			}
			return printDiscovered(out, d, fleetPath)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&gpus, "gpus", "auto", "auto (NVML, else nvidia-smi) or virtual:COUNTxMODEL[-MEMGB]")
	fl.StringVar(&fleetPath, "fleet", "", "fleet file whose SKUs to match too (default: the built-in catalog alone)")
	fl.StringVar(&node, "node", "", "the node's name in -o fleet (default: the host name)")
	fl.StringVarP(&output, "output", "o", "table", "output format: table, json, or fleet (a one-node fleet file)")
	return cmd
}

// fittingSKUs names the SKUs of catalog a host with devs registers as: as
// many GPUs, all of the SKU's model (what the server checks), sorted.
func fittingSKUs(catalog model.Catalog, devs []gpu.Device) []string {
	out := []string{}
	for name, s := range catalog {
		if s.GPUs != len(devs) || s.GPUs == 0 {
			continue
		}
		if !slices.ContainsFunc(devs, func(g gpu.Device) bool { return g.Model != s.GPUModel }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func printDiscovered(w io.Writer, d discovered, fleetPath string) error {
	fmt.Fprintf(w, "%d GPUs (found by %s):\n", len(d.GPUs), d.Way)
	t := table{header: []string{"INDEX", "UUID", "NAME", "MODEL", "MEMORY"}}
	for _, g := range d.GPUs {
		t.add(strconv.Itoa(g.Index), g.UUID, g.Name, g.Model, strconv.FormatInt(g.MemoryMiB, 10)+" MiB")
	}
	if err := t.print(w); err != nil {
		return err
	}
	where := "the built-in catalog"
	if fleetPath != "" {
		where = "the built-in catalog and " + fleetPath
	}
	if len(d.SKUs) > 0 {
		fmt.Fprintf(w, "\nSKUs of %s this host registers as: %s.\n", where, strings.Join(d.SKUs, ", "))
		return nil
	}
	fmt.Fprintf(w, "\nNo SKU of %s has %s: give the node a SKU of its own in the fleet file's skus:\n"+
		"('allot agent discover -o fleet' prints one), or the agent's registration is refused.\n", where, shape(d.GPUs))
	return nil
}

// shape says what GPUs a host has: "1 × H200", "8 × H100", "2 × A100 and 1 × T4".
func shape(gpus []discoveredGPU) string {
	var models []string
	count := map[string]int{}
	for _, g := range gpus {
		if count[g.Model] == 0 {
			models = append(models, g.Model)
		}
		count[g.Model]++
	}
	parts := make([]string, len(models))
	for i, m := range models {
		parts[i] = fmt.Sprintf("%d × %s", count[m], m)
	}
	return strings.Join(parts, " and ")
}

// writeHostFleet writes a fleet file of one node, the host d describes.
func writeHostFleet(w io.Writer, d discovered, node string) error {
	if len(d.GPUs) == 0 {
		return fmt.Errorf("no GPUs found: a fleet node needs its GPUs")
	}
	if slices.ContainsFunc(d.GPUs, func(g discoveredGPU) bool { return g.Model != d.GPUs[0].Model }) {
		return fmt.Errorf("this host has %s; a SKU has one GPU model", shape(d.GPUs))
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# One GPU host, as 'allot agent discover' found it (%s, %s).\n", shape(d.GPUs), d.Way)
	sku := ""
	if len(d.SKUs) > 0 {
		sku = d.SKUs[0]
		fmt.Fprintf(bw, "# Its SKU, %s, is in the built-in catalog.\n", sku)
	} else {
		g := d.GPUs[0]
		sku = fmt.Sprintf("LOCAL-%sx%d", g.Model, len(d.GPUs))
		fmt.Fprintf(bw, "# No built-in SKU has its GPUs: this one is declared from the host. Set its prices\n")
		fmt.Fprintf(bw, "# (per node-hour) and power, or its GPU-hours cost nothing in allot's accounts.\n")
		fmt.Fprintf(bw, "skus:\n  - {name: %s, series: NC, gpu_model: %s, gpu_memory_gib: %d, gpus: %d, vcpu: %d, memory_gib: %d,\n",
			sku, yamlScalar(g.Model), (g.MemoryMiB+512)/1024, len(d.GPUs), runtime.NumCPU(), hostMemoryGiB())
		fmt.Fprintf(bw, "     interconnect: ethernet, power_kw: 0, price_per_hour: 0, spot_price_per_hour: 0, reserved_price_per_hour: 0}\n")
	}
	fmt.Fprintf(bw, "regions:\n  - name: local\n    residency: local\n    clusters:\n      - name: local\n        fabric: ethernet\n")
	fmt.Fprintf(bw, "        racks:\n          - name: local\n            nodes:\n              - {name: %s, sku: %s}\n", yamlScalar(node), sku)
	return bw.Flush()
}

// yamlScalar quotes s when YAML would read it as anything but that string.
func yamlScalar(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(s)
		}
	}
	if s == "" || strings.ContainsAny(s[:1], "-.0123456789") {
		return strconv.Quote(s)
	}
	return s
}

// hostMemoryGiB is this host's memory from /proc/meminfo, 1 where it
// cannot be read (a SKU needs a positive size).
func hostMemoryGiB() int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil && kb >= 1<<20 {
				return int(kb >> 20)
			}
		}
	}
	return 1
}
