package kube

// The labels and annotations the controller reads and writes
// (docs/kubernetes.md lists them with examples).
const (
	// GPUResource is the extended resource of NVIDIA's device plugin:
	// a node's allocatable GPUs and a pod's GPU limit.
	GPUResource = "nvidia.com/gpu"

	// Node labels.

	// LabelGPUProduct is set by NVIDIA's GPU feature discovery
	// (e.g. NVIDIA-H100-80GB-HBM3); the GPU model is read from it.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelGPUMemory is GPU feature discovery's memory per GPU, in MiB.
	LabelGPUMemory = "nvidia.com/gpu.memory"
	// LabelGPUModel overrides the model read from LabelGPUProduct (H100).
	LabelGPUModel = "allot.dev/gpu-model"
	// LabelRegion and LabelZone are Kubernetes' well-known topology labels.
	LabelRegion = "topology.kubernetes.io/region"
	LabelZone   = "topology.kubernetes.io/zone"
	// LabelCluster names the node's allot cluster: the nodes of one
	// network fabric, where a gang is placed whole. Default: the zone,
	// else the region.
	LabelCluster = "allot.dev/cluster"
	// LabelFabric is the cluster's fabric: infiniband, roce or ethernet
	// (default ethernet).
	LabelFabric = "allot.dev/fabric"
	// LabelLeaf is the node's InfiniBand leaf group.
	LabelLeaf = "allot.dev/leaf"
	// LabelRack is the node's rack.
	LabelRack = "allot.dev/rack"
	// LabelSKU names the node's size; quotas and reservations name it.
	// Default: MODELxGPUS (H100x8), or cpu for a node without GPUs.
	LabelSKU = "allot.dev/sku"
	// LabelSeries is the SKU's series, which quotas count (ND).
	// Default: gpu, or cpu for a node without GPUs.
	LabelSeries = "allot.dev/series"
	// LabelResidency is the region's residency zone (eu). Default: the
	// region's name.
	LabelResidency = "allot.dev/residency"

	// Namespace label or annotation: the tenant of the namespace's pods
	// (default: the namespace's name).
	LabelTenant = "allot.dev/tenant"

	// Pod annotations.

	// AnnotationClass is the pod's priority: spot, standard or reserved,
	// optionally :N (standard:5). Without it the pod's PriorityClass
	// decides: its own AnnotationClass, else its name when it is a class
	// name, else standard.
	AnnotationClass = "allot.dev/class"
	// AnnotationPodGroup and AnnotationPodGroupSize make a gang: the pods
	// of one namespace naming one group are bound all together or not at
	// all, once at least size of them exist. LabelPodGroup, the label of
	// the scheduler-plugins coscheduling plugin, names a group too; its
	// size is AnnotationPodGroupSize, else the PodGroup's spec.minMember
	// (podgroup.go).
	AnnotationPodGroup     = "allot.dev/pod-group"
	AnnotationPodGroupSize = "allot.dev/pod-group-size"
	LabelPodGroup          = "scheduling.x-k8s.io/pod-group"
	// AnnotationGPUMilli asks for a fraction of one GPU, in milli-GPU
	// (1 to 999); the pod then asks for no nvidia.com/gpu.
	AnnotationGPUMilli = "allot.dev/gpu-milli"
	// AnnotationReservation runs the pod inside an allot reservation.
	AnnotationReservation = "allot.dev/reservation"
	// AnnotationGPUModels limits the GPU models (H100,A100).
	AnnotationGPUModels = "allot.dev/gpu-models"
	// AnnotationRegions limits the regions (eastus,westus).
	AnnotationRegions = "allot.dev/regions"
	// AnnotationInterconnect asks a gang's nodes for one fabric.
	AnnotationInterconnect = "allot.dev/interconnect"

	// Written on bound pods (through the Binding).

	// AnnotationGPUs is the GPU indices the core chose on the node (0,1).
	AnnotationGPUs = "allot.dev/gpus"
	// AnnotationPlacement is, on each pod of a gang, the whole gang's
	// placement (pod=node:gpus:milli;...), so that a restarted controller
	// finishes a gang it bound in part instead of placing it again.
	AnnotationPlacement = "allot.dev/placement"

	// AnnotationEvictedFor is written on a pod before it is deleted for
	// another job (its ID): the job waits for it to exit, and a restarted
	// controller still knows why it goes.
	AnnotationEvictedFor = "allot.dev/evicted-for"

	// SchedulerName is the default spec.schedulerName of allot's pods.
	SchedulerName = "allot"
)
