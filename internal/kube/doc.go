// Package kube drives allot's scheduling core on a Kubernetes cluster: a
// third driver of package sched, beside the server and the simulator,
// with no placement path of its own.
//
// Its world comes from two sources of truth. Pod and Node state comes
// from the API server through client-go informers: Nodes become the fleet
// (node.go; GPUs from allocatable nvidia.com/gpu, the model from GPU
// feature discovery's nvidia.com/gpu.product, region and zone from the
// well-known topology labels, cluster, fabric, leaf, rack, SKU and quota
// series from allot.dev/ labels), and the pods whose spec.schedulerName is
// allot become the core's jobs (pod.go, work.go): the tenant from the
// namespace, the class from an annotation or the PriorityClass, a gang
// from a pod group (all its pods one job), a fraction of one GPU from an
// annotation. Tenancy (partitions, tenants, quotas, reservations) comes
// from the tenants file and allot's store, as the server reads them
// (server.StoredTenancy). labels.go lists every label and annotation;
// docs/kubernetes.md says what maps to what.
//
// A cycle (Controller.Cycle) snapshots the informers, plans with the same
// strategy.Apply and sched.Incremental the server uses, and commits the
// Plan as the API server's own operations: a bind is a Binding subresource
// per pod, carrying the GPU indices the core chose (and, for a gang, the
// whole gang's placement); a preemption deletes the victim's pods with
// their own termination grace, and the job it made room for is bound once
// they are gone, not before (their GPUs are theirs until they exit); every
// pending pod gets the core's reason and detail as its PodScheduled
// condition and an Event, written only when they change.
//
// The controller keeps no state of its own that matters across a
// restart: everything is read back from the API server. Binds it made but
// has not yet seen through its informer are assumed (counted as bound)
// until it sees them, so no cycle places a pod twice; the API server
// refuses a second Binding of a bound pod. A controller that stops between
// the binds of a gang leaves the gang's placement on the pods it bound; the
// next one binds the rest there (Cycle, step 3). Several controllers share
// a Lease (leader.go): only its holder schedules, and one that loses it
// stops before another may take it (client-go's leader election: a
// leader stops after RenewDeadline without renewing, the others wait the
// whole LeaseDuration).
//
// Package kubetest runs a real kube-apiserver and etcd (built by
// scripts/kube-assets.sh from the tools module tools/kube) through
// controller-runtime's envtest, with a fake kubelet, for the tests.
package kube
