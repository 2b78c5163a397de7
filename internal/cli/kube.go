package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/allot-dev/allot/internal/kube"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
)

// kubeFlags are allot kube's flags.
type kubeFlags struct {
	kubeconfig, tenants, data, store string
	schedulerName, listen, logLevel  string
	tick, minRunTime                 time.Duration
	priorityGap                      int
	qps                              float64
	burst, binders                   int
	leaderElect                      bool
	leaseNamespace, leaseName, id    string
}

func newKubeCmd() *cobra.Command {
	f := kubeFlags{}
	cmd := &cobra.Command{
		Use:   "kube --kubeconfig FILE --tenants T [--data DIR]",
		Short: "Schedule a Kubernetes cluster's GPU pods with allot's core",
		Long: `kube runs allot as a Kubernetes scheduler: it watches Nodes and Pods and
binds the pods whose spec.schedulerName is allot (--scheduler-name) with the
same core, the same reasons and the same tenancy as 'allot server'.

Nodes are the fleet: GPUs from allocatable nvidia.com/gpu, the model from
nvidia.com/gpu.product (GPU feature discovery) or allot.dev/gpu-model,
region and zone from topology.kubernetes.io/region and /zone, the cluster
(one fabric, where a gang is placed whole) from allot.dev/cluster (default:
the zone), its fabric from allot.dev/fabric (infiniband, roce or ethernet),
the leaf group from allot.dev/leaf, the SKU and quota series from
allot.dev/sku and allot.dev/series (default MODELxGPUS and gpu).

Pods are the work: the tenant is the namespace's allot.dev/tenant label or
annotation (default: the namespace's name); the class (spot, standard,
reserved[:N]) the pod's allot.dev/class annotation or its PriorityClass's;
a gang is the pods sharing allot.dev/pod-group with allot.dev/pod-group-size,
or the scheduler-plugins label scheduling.x-k8s.io/pod-group with its
PodGroup's spec.minMember (when PodGroups are served at start); a
fraction of one GPU is allot.dev/gpu-milli; allot.dev/reservation runs a pod
in a reservation. docs/kubernetes.md lists them all.

Binds are Binding subresources (a gang's pods all, or none); preemptions
delete the victim's pods with their own grace; every pending pod carries
the core's reason and detail as its PodScheduled condition and an Event.

The tenants, partitions, quotas and reservations come from --tenants and
from allot's store (--data's bolt file, or --store etcd://… shared with
'allot server'): reservations made and quotas approved through the API
count here too. With --leader-elect several controllers share a Lease and
only its holder schedules. --listen serves 'allot job why NAMESPACE/POD'
with the token in DATA/kube-token.`,
		Example: `  allot kube --kubeconfig ~/.kube/config --tenants tenants.yaml --data /var/lib/allot-kube
  allot kube --tenants /etc/allot/tenants.yaml --store etcd://10.0.0.1:2379/allot \
      --leader-elect --lease-namespace allot-system          # in a pod: in-cluster config
  ALLOT_TOKEN=$(cat /var/lib/allot-kube/kube-token) \
      allot job why team-a/train-0 --server http://127.0.0.1:8081`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.data == "" && !cmd.Flags().Changed("listen") {
				f.listen = "" // 'job why' needs a token, kept in --data
			}
			return runKube(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file of the cluster (default $KUBECONFIG; empty: the in-cluster config of a pod)")
	fl.StringVar(&f.tenants, "tenants", "examples/tenants.yaml", "tenants, partitions, quotas and reservations file, read against the cluster's nodes")
	fl.StringVar(&f.data, "data", "", "directory of the store (DIR/allot.db unless --store says otherwise) and of kube-token; empty with no --store: the tenants file alone")
	fl.StringVar(&f.store, "store", "", "allot's store: bolt:DIR or etcd://HOST:PORT[,HOST:PORT...][/prefix] (share an etcd store with 'allot server' to use its reservations and quotas)")
	fl.StringVar(&f.schedulerName, "scheduler-name", kube.SchedulerName, "spec.schedulerName of the pods to schedule")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8081", "address serving 'allot job why' for pods, with --data (empty: none)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.DurationVar(&f.tick, "tick", time.Second, "interval of scheduling cycles when nothing changes")
	fl.DurationVar(&f.minRunTime, "min-run-time", 0, "protect each pod from preemption for this long after it starts (0: no protection)")
	fl.IntVar(&f.priorityGap, "priority-gap", 0, "let a pod evict its own tenant's pods of its class whose priority value is at least this much lower (0: off)")
	fl.Float64Var(&f.qps, "kube-qps", 200, "requests per second to the API server")
	fl.IntVar(&f.burst, "kube-burst", 400, "requests to the API server at once")
	fl.IntVar(&f.binders, "binders", 16, "Bindings posted at once")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "schedule only while holding the Lease --lease-namespace/--lease-name (run several controllers for HA)")
	fl.StringVar(&f.leaseNamespace, "lease-namespace", "kube-system", "namespace of the leader election Lease")
	fl.StringVar(&f.leaseName, "lease-name", "allot-scheduler", "name of the leader election Lease")
	fl.StringVar(&f.id, "identity", "", "this controller's name in the Lease (default: host name and process ID)")
	return cmd
}

func runKube(ctx context.Context, out, errOut io.Writer, f kubeFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return Usage(fmt.Errorf("--log-level: %w", err))
	}
	if f.qps <= 0 || f.burst < 1 || f.binders < 1 {
		return Usage(fmt.Errorf("--kube-qps %g, --kube-burst %d, --binders %d: want positive values", f.qps, f.burst, f.binders))
	}
	if f.tick <= 0 || f.minRunTime < 0 || f.priorityGap < 0 {
		return Usage(errors.New("--tick must be positive, --min-run-time and --priority-gap not negative"))
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	tenants, err := os.ReadFile(f.tenants)
	if err != nil {
		return Usage(fmt.Errorf("--tenants: %w", err))
	}
	rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return Usage(fmt.Errorf("--kubeconfig %q: %w", f.kubeconfig, err))
	}
	rc.QPS, rc.Burst = float32(f.qps), f.burst
	rc.UserAgent = "allot-kube"
	cl, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	var st store.Store
	if f.store != "" || f.data != "" {
		where, err := parseStoreFlag(f.store, f.data)
		if err != nil {
			return Usage(err)
		}
		if where.boltDir == "" && where.etcd == nil {
			return Usage(errors.New("--store bolt: needs a directory"))
		}
		if st, err = where.open(ctx, log); err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		if c, ok := st.(io.Closer); ok {
			defer func() { _ = c.Close() }()
		}
	}
	c, err := kube.New(kube.Config{Client: cl, Dynamic: dyn, SchedulerName: f.schedulerName, TenantsName: f.tenants, Tenants: tenants, Store: st,
		Sched: sched.Config{MinRunTime: f.minRunTime, PriorityGap: f.priorityGap}, Tick: f.tick, Binders: f.binders, Log: log})
	if err != nil {
		return err
	}
	if f.listen != "" {
		if f.data == "" {
			return Usage(errors.New("--listen needs --data, where the token of 'job why' is kept (kube-token); --listen '' serves nothing"))
		}
		token, err := kubeToken(f.data)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", f.listen)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		srv := &http.Server{Handler: c.Handler(token), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Close() }()
		fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	}
	var lease *kube.Lease
	if f.leaderElect {
		id := f.id
		if id == "" {
			host, _ := os.Hostname()
			id = fmt.Sprintf("%s_%d", host, os.Getpid())
		}
		lease = &kube.Lease{Namespace: f.leaseNamespace, Name: f.leaseName, Identity: id}
	}
	log.Info("scheduling pods", "scheduler_name", f.schedulerName, "leader_elect", f.leaderElect)
	err = c.Run(ctx, lease)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// kubeToken returns the token of DIR/kube-token, creating it (mode 0600)
// on first use.
func kubeToken(dir string) (string, error) {
	path := filepath.Join(dir, "kube-token")
	b, err := os.ReadFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%s is empty: delete it to get a new token", path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("--data: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	t := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return t, nil
}
