package kube

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/allot-dev/allot/internal/model"
)

// nodeShape is what one Kubernetes Node brings to the fleet: the model
// node, its SKU and the cluster it belongs to.
type nodeShape struct {
	node      model.Node
	sku       model.SKU
	fabric    model.Fabric
	residency string
}

// readNode translates a Node. The error names the node and the label or
// field at fault; such a node stays out of the fleet.
func readNode(n *corev1.Node) (nodeShape, error) {
	fail := func(field, format string, args ...any) (nodeShape, error) {
		return nodeShape{}, fmt.Errorf("node %s: %s: %s", n.Name, field, fmt.Sprintf(format, args...))
	}
	l := n.Labels
	var s nodeShape
	gpus := int64(0)
	if q, ok := n.Status.Allocatable[GPUResource]; ok {
		gpus = q.Value()
	}
	if gpus < 0 || gpus > 64 {
		return fail("status.allocatable["+GPUResource+"]", "must be between 0 and 64, got %d", gpus)
	}
	model_, err := gpuModel(l)
	if err != nil {
		return nodeShape{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if gpus > 0 && model_ == "" {
		return fail("labels", "allocatable %s is %d but neither %s nor %s names the GPU model", GPUResource, gpus, LabelGPUProduct, LabelGPUModel)
	}
	cpu := n.Status.Allocatable.Cpu().MilliValue() / 1000
	mem := n.Status.Allocatable.Memory().Value() >> 30
	if cpu < 1 {
		return fail("status.allocatable.cpu", "must be at least 1 core, got %s", n.Status.Allocatable.Cpu())
	}
	if mem < 1 {
		return fail("status.allocatable.memory", "must be at least 1Gi, got %s", n.Status.Allocatable.Memory())
	}
	gpuMem := 0
	if v, ok := l[LabelGPUMemory]; ok && gpus > 0 {
		mib, err := strconv.Atoi(v)
		if err != nil || mib < 0 {
			return fail("labels["+LabelGPUMemory+"]", "want MiB as a whole number, got %q", v)
		}
		gpuMem = mib / 1024
	}
	fabric := model.FabricEthernet
	if v, ok := l[LabelFabric]; ok {
		fabric = model.Fabric(strings.ToLower(v))
		if !fabric.Valid() {
			return fail("labels["+LabelFabric+"]", "want infiniband, roce or ethernet, got %q", v)
		}
	}
	region := l[LabelRegion]
	if region == "" {
		region = "default"
	}
	cluster := l[LabelCluster]
	if cluster == "" {
		cluster = l[LabelZone]
	}
	if cluster == "" {
		cluster = region
	}
	series := l[LabelSeries]
	sku := l[LabelSKU]
	switch {
	case gpus == 0:
		model_ = ""
		if series == "" {
			series = "cpu"
		}
		if sku == "" {
			sku = "cpu"
		}
	default:
		if series == "" {
			series = "gpu"
		}
		if sku == "" {
			sku = fmt.Sprintf("%sx%d", model_, gpus)
		}
	}
	for _, f := range []struct{ label, v string }{{LabelRegion, region}, {LabelCluster, cluster}, {LabelSKU, sku},
		{LabelSeries, series}, {LabelLeaf, l[LabelLeaf]}, {LabelRack, l[LabelRack]}, {LabelResidency, l[LabelResidency]}} {
		if err := model.Printable("labels["+f.label+"]", f.v); err != nil {
			return nodeShape{}, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	s.residency = l[LabelResidency]
	if s.residency == "" {
		s.residency = region
	}
	s.fabric = fabric
	s.sku = model.SKU{Name: sku, Series: series, GPUModel: model_, GPUMemoryGiB: gpuMem, GPUs: int(gpus),
		VCPU: int(cpu), MemoryGiB: int(mem), Interconnect: fabric}
	s.node = model.Node{Name: n.Name, SKU: sku, Region: region, Cluster: cluster, Leaf: l[LabelLeaf], Rack: l[LabelRack],
		Health: health(n)}
	return s, nil
}

// gpuModel reads a node's GPU model: LabelGPUModel, else the product
// GPU feature discovery names (NVIDIA-H100-80GB-HBM3 is H100,
// Tesla-T4 is T4, NVIDIA-A100-SXM4-80GB is A100); "" when neither is set.
func gpuModel(l map[string]string) (string, error) {
	if m, ok := l[LabelGPUModel]; ok {
		if m == "" {
			return "", fmt.Errorf("%s must not be empty", LabelGPUModel)
		}
		return m, model.Printable(LabelGPUModel, m)
	}
	p, ok := l[LabelGPUProduct]
	if !ok {
		return "", nil
	}
	rest := p
	for _, vendor := range []string{"NVIDIA-", "Tesla-", "NVIDIA ", "Tesla "} {
		rest = strings.TrimPrefix(rest, vendor)
	}
	m, _, _ := strings.Cut(rest, "-")
	m, _, _ = strings.Cut(m, " ")
	if m == "" {
		return "", fmt.Errorf("%s %q names no GPU model; set %s", LabelGPUProduct, p, LabelGPUModel)
	}
	return m, model.Printable(LabelGPUProduct, m)
}

// health is Ready for a node whose Ready condition is True, Draining for
// one cordoned (spec.unschedulable) and NotReady otherwise.
func health(n *corev1.Node) model.Health {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	switch {
	case !ready:
		return model.NodeNotReady
	case n.Spec.Unschedulable:
		return model.NodeDraining
	}
	return model.NodeReady
}

// buildFleet turns Nodes into a fleet. Nodes that cannot join it (a bad
// label, a SKU name two shapes share, a cluster of two fabrics) are left
// out, each with its error in problems, by node name.
func buildFleet(nodes []*corev1.Node) (*model.Fleet, map[string]error) {
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].Name < nodes[b].Name })
	f := &model.Fleet{Catalog: model.Catalog{}}
	problems := map[string]error{}
	type clusterInfo struct {
		region string
		fabric model.Fabric
		racks  map[string]bool
	}
	regions := map[string]int{} // index in f.Regions
	clusters := map[string]*clusterInfo{}
	racks := map[string]string{} // rack -> cluster
	for _, n := range nodes {
		s, err := readNode(n)
		if err != nil {
			problems[n.Name] = err
			continue
		}
		if old, ok := f.Catalog[s.sku.Name]; ok {
			if old.GPUs != s.sku.GPUs || old.GPUModel != s.sku.GPUModel || old.Series != s.sku.Series {
				problems[n.Name] = fmt.Errorf("node %s: labels[%s]: SKU %s is %d %s GPUs of series %s on other nodes, %d %s of series %s here: label the sizes apart",
					n.Name, LabelSKU, s.sku.Name, old.GPUs, old.GPUModel, old.Series, s.sku.GPUs, s.sku.GPUModel, s.sku.Series)
				continue
			}
			// Nodes of one SKU differ a little in what they can
			// allocate: the SKU is the least of them.
			old.VCPU, old.MemoryGiB = min(old.VCPU, s.sku.VCPU), min(old.MemoryGiB, s.sku.MemoryGiB)
			old.GPUMemoryGiB = min(old.GPUMemoryGiB, s.sku.GPUMemoryGiB)
			s.sku = old
		}
		c, ok := clusters[s.node.Cluster]
		switch {
		case ok && c.region != s.node.Region:
			problems[n.Name] = fmt.Errorf("node %s: labels[%s]: cluster %s is in region %s, this node in %s", n.Name, LabelRegion, s.node.Cluster, c.region, s.node.Region)
			continue
		case ok && c.fabric != s.fabric:
			problems[n.Name] = fmt.Errorf("node %s: labels[%s]: cluster %s is %s, this node says %s", n.Name, LabelFabric, s.node.Cluster, c.fabric, s.fabric)
			continue
		}
		if r := s.node.Rack; r != "" {
			if cl, ok := racks[r]; ok && cl != s.node.Cluster {
				problems[n.Name] = fmt.Errorf("node %s: labels[%s]: rack %s is in cluster %s, this node in %s", n.Name, LabelRack, r, cl, s.node.Cluster)
				continue
			}
		}
		ri, ok := regions[s.node.Region]
		if !ok {
			ri = len(f.Regions)
			regions[s.node.Region] = ri
			f.Regions = append(f.Regions, model.Region{Name: s.node.Region, Residency: s.residency})
		}
		if c == nil {
			c = &clusterInfo{region: s.node.Region, fabric: s.fabric, racks: map[string]bool{}}
			clusters[s.node.Cluster] = c
			f.Regions[ri].Clusters = append(f.Regions[ri].Clusters, model.Cluster{Name: s.node.Cluster, Fabric: s.fabric})
		}
		if r := s.node.Rack; r != "" && !c.racks[r] {
			c.racks[r] = true
			racks[r] = s.node.Cluster
			cl := f.Regions[ri].Clusters
			for i := range cl {
				if cl[i].Name == s.node.Cluster {
					cl[i].Racks = append(cl[i].Racks, model.Rack{Name: r})
				}
			}
		}
		f.Catalog[s.sku.Name] = s.sku
		f.Nodes = append(f.Nodes, s.node)
	}
	return f, problems
}
