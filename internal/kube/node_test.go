package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/allot-dev/allot/internal/model"
)

func kubeNode(name string, gpus string, labels map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1900Gi")}
	if gpus != "" {
		n.Status.Allocatable[GPUResource] = resource.MustParse(gpus)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

func TestReadNode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gpus   string
		labels map[string]string
		want   model.Node
		sku    model.SKU
		err    string
	}{
		{name: "gfd", gpus: "8", labels: map[string]string{LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", LabelGPUMemory: "81559",
			LabelRegion: "eastus", LabelZone: "eastus-2", LabelFabric: "InfiniBand", LabelLeaf: "leaf-1", LabelSeries: "ND"},
			want: model.Node{Name: "gfd", SKU: "H100x8", Region: "eastus", Cluster: "eastus-2", Leaf: "leaf-1", Health: model.NodeReady},
			sku:  model.SKU{Name: "H100x8", Series: "ND", GPUModel: "H100", GPUMemoryGiB: 79, GPUs: 8, VCPU: 96, MemoryGiB: 1900, Interconnect: model.FabricInfiniBand}},
		{name: "t4", gpus: "1", labels: map[string]string{LabelGPUProduct: "Tesla-T4", LabelCluster: "edge", LabelSKU: "NC4-T4x1"},
			want: model.Node{Name: "t4", SKU: "NC4-T4x1", Region: "default", Cluster: "edge", Health: model.NodeReady},
			sku:  model.SKU{Name: "NC4-T4x1", Series: "gpu", GPUModel: "T4", GPUs: 1, VCPU: 96, MemoryGiB: 1900, Interconnect: model.FabricEthernet}},
		{name: "cpu", labels: map[string]string{LabelRegion: "westus"},
			want: model.Node{Name: "cpu", SKU: "cpu", Region: "westus", Cluster: "westus", Health: model.NodeReady},
			sku:  model.SKU{Name: "cpu", Series: "cpu", VCPU: 96, MemoryGiB: 1900, Interconnect: model.FabricEthernet}},
		{name: "override", gpus: "4", labels: map[string]string{LabelGPUProduct: "NVIDIA-GeForce-RTX-4090", LabelGPUModel: "RTX4090"},
			want: model.Node{Name: "override", SKU: "RTX4090x4", Region: "default", Cluster: "default", Health: model.NodeReady},
			sku:  model.SKU{Name: "RTX4090x4", Series: "gpu", GPUModel: "RTX4090", GPUs: 4, VCPU: 96, MemoryGiB: 1900, Interconnect: model.FabricEthernet}},
		{name: "nomodel", gpus: "8", err: "neither nvidia.com/gpu.product nor allot.dev/gpu-model"},
		{name: "badfabric", gpus: "8", labels: map[string]string{LabelGPUModel: "H100", LabelFabric: "carrier-pigeon"}, err: "labels[allot.dev/fabric]"},
		{name: "badmem", gpus: "8", labels: map[string]string{LabelGPUModel: "H100", LabelGPUMemory: "lots"}, err: "labels[nvidia.com/gpu.memory]"},
		{name: "toomany", gpus: "65", labels: map[string]string{LabelGPUModel: "H100"}, err: "allocatable[nvidia.com/gpu]"},
		{name: "emptymodel", gpus: "8", labels: map[string]string{LabelGPUModel: ""}, err: "allot.dev/gpu-model must not be empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := readNode(kubeNode(tt.name, tt.gpus, tt.labels))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.name) {
					t.Fatalf("err = %v, want one naming the node and %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.node.Name != tt.want.Name || s.node.SKU != tt.want.SKU || s.node.Region != tt.want.Region ||
				s.node.Cluster != tt.want.Cluster || s.node.Leaf != tt.want.Leaf || s.node.Health != tt.want.Health {
				t.Errorf("node = %+v, want %+v", s.node, tt.want)
			}
			if s.sku != tt.sku {
				t.Errorf("sku = %+v, want %+v", s.sku, tt.sku)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	n := kubeNode("n", "8", nil)
	if h := health(n); h != model.NodeReady {
		t.Errorf("ready node: %s", h)
	}
	n.Spec.Unschedulable = true
	if h := health(n); h != model.NodeDraining {
		t.Errorf("cordoned node: %s", h)
	}
	n.Status.Conditions[0].Status = corev1.ConditionUnknown
	if h := health(n); h != model.NodeNotReady {
		t.Errorf("node not ready: %s", h)
	}
}

// TestBuildFleet: nodes group into regions and clusters; one that
// contradicts the others (a SKU name of another size, a cluster of another
// fabric or region) is left out with an error naming it and the label,
// and the fleet that remains is valid.
func TestBuildFleet(t *testing.T) {
	ib := func(cluster string) map[string]string {
		return map[string]string{LabelGPUModel: "H100", LabelRegion: "eastus", LabelCluster: cluster, LabelFabric: "infiniband", LabelRack: "r-" + cluster}
	}
	nodes := []*corev1.Node{
		kubeNode("a1", "8", ib("a")), kubeNode("a2", "8", ib("a")), kubeNode("b1", "8", ib("b")),
		kubeNode("eth", "8", map[string]string{LabelGPUModel: "H100", LabelRegion: "eastus", LabelCluster: "a"}),
		kubeNode("west", "8", map[string]string{LabelGPUModel: "H100", LabelRegion: "westus", LabelCluster: "a", LabelFabric: "infiniband"}),
		kubeNode("small", "4", map[string]string{LabelGPUModel: "H100", LabelSKU: "H100x8"}),
		kubeNode("norack", "8", map[string]string{LabelGPUModel: "H100", LabelRegion: "eastus", LabelCluster: "b", LabelFabric: "infiniband", LabelRack: "r-a"}),
	}
	f, problems := buildFleet(nodes)
	for node, label := range map[string]string{"eth": LabelFabric, "west": LabelRegion, "small": LabelSKU, "norack": LabelRack} {
		err := problems[node]
		if err == nil || !strings.Contains(err.Error(), label) || !strings.Contains(err.Error(), node) {
			t.Errorf("node %s: problem %v, want one naming it and %s", node, err, label)
		}
	}
	if len(problems) != 4 || len(f.Nodes) != 3 {
		t.Fatalf("fleet has %d nodes and %d problems: %v", len(f.Nodes), len(problems), problems)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("fleet does not validate: %v", err)
	}
	if len(f.Regions) != 1 || len(f.Regions[0].Clusters) != 2 {
		t.Fatalf("regions = %+v", f.Regions)
	}
}

// FuzzReadNode: whatever the labels and GPU count, a node either joins a
// valid fleet or is refused with an error naming it; never a panic.
func FuzzReadNode(f *testing.F) {
	f.Add("NVIDIA-H100-80GB-HBM3", "", "eastus", "z1", "", "infiniband", "81559", "", int64(8))
	f.Add("Tesla-T4", "T4", "", "", "c", "ethernet", "x", "NC4", int64(1))
	f.Add("-", "", "", "", "", "", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, product, gpuModel, region, zone, cluster, fabric, mem, sku string, gpus int64) {
		labels := map[string]string{}
		for k, v := range map[string]string{LabelGPUProduct: product, LabelGPUModel: gpuModel, LabelRegion: region, LabelZone: zone,
			LabelCluster: cluster, LabelFabric: fabric, LabelGPUMemory: mem, LabelSKU: sku} {
			if v != "" {
				labels[k] = v
			}
		}
		n := kubeNode("fuzz", "", labels)
		n.Status.Allocatable[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
		f, problems := buildFleet([]*corev1.Node{n})
		if err := problems["fuzz"]; err != nil {
			if !strings.Contains(err.Error(), "fuzz") {
				t.Fatalf("error %q does not name the node", err)
			}
			return
		}
		if err := f.Validate(); err != nil {
			t.Fatalf("labels %v make an invalid fleet: %v", labels, err)
		}
		for _, s := range f.Catalog {
			if err := s.Validate(); err != nil {
				t.Fatalf("labels %v make an invalid SKU: %v", labels, err)
			}
		}
	})
}
