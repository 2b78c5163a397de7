package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// writeE2EFiles writes the fleet of e2eFleet(n) and the tenancy of
// e2eTenancy as DIR/fleet.yaml and DIR/tenants.yaml, the files 'allot
// server --fleet --tenants' reads, so that a server run as its own process
// schedules the fleet the in-process bench does. It returns the two paths.
func writeE2EFiles(dir string, n int) (fleetPath, tenantsPath string, err error) {
	fleet, err := e2eFleet(n)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	fleetPath, tenantsPath = filepath.Join(dir, "fleet.yaml"), filepath.Join(dir, "tenants.yaml")
	write := func(path string, body func(w *bufio.Writer)) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		body(w)
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		return f.Close()
	}
	err = write(fleetPath, func(w *bufio.Writer) {
		fmt.Fprintf(w, "# allot bench e2e --nodes %d: %d nodes of 8 H100 GPUs (%s), racks of 8, leaves of 32,\n", n, n, e2eSKU)
		fmt.Fprintf(w, "# clusters of at most %d nodes, one region.\nregions:\n", e2eClusterNodes)
		// e2eFleet lists the nodes cluster by cluster, rack by rack.
		r := fleet.Regions[0]
		fmt.Fprintf(w, "  - name: %s\n    residency: %s\n    clusters:\n", r.Name, r.Residency)
		cluster, rack := "", ""
		for _, node := range fleet.Nodes {
			if node.Cluster != cluster {
				cluster, rack = node.Cluster, ""
				fmt.Fprintf(w, "      - name: %s\n        fabric: %s\n        racks:\n", cluster, r.Clusters[0].Fabric)
			}
			if node.Rack != rack {
				rack = node.Rack
				fmt.Fprintf(w, "          - name: %s\n            nodes:\n", rack)
			}
			fmt.Fprintf(w, "              - {name: %s, sku: %s, leaf: %s}\n", node.Name, node.SKU, node.Leaf)
		}
	})
	if err != nil {
		return "", "", err
	}
	err = write(tenantsPath, func(w *bufio.Writer) {
		fmt.Fprintf(w, "# allot bench e2e: one tenant in a partition without guarantees.\n")
		fmt.Fprintf(w, "partitions:\n  - {name: %s, tier: shared}\ntenants:\n  - {name: %s, kind: internal, partition: %s}\n",
			e2eTenant, e2eTenant, e2eTenant)
	})
	if err != nil {
		return "", "", err
	}
	return fleetPath, tenantsPath, nil
}
