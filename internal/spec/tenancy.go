package spec

import (
	"fmt"
	"os"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// tenancyFile is the layout of a tenants file.
type tenancyFile struct {
	Strategy     string             `yaml:"strategy"`
	Partitions   []partitionEntry   `yaml:"partitions"`
	Tenants      []tenantEntry      `yaml:"tenants"`
	Quotas       []quotaEntry       `yaml:"quotas"`
	Reservations []reservationEntry `yaml:"reservations"`
}

type partitionEntry struct {
	Name       string            `yaml:"name"`
	Tier       string            `yaml:"tier"`
	Guarantees []guaranteeEntry  `yaml:"guarantees"`
	Labels     map[string]string `yaml:"labels"`
}

type guaranteeEntry struct {
	Region      string  `yaml:"region"`
	GPUModel    string  `yaml:"gpu_model"`
	GPUs        int     `yaml:"gpus"`
	Percent     float64 `yaml:"percent"`
	BorrowLimit *int    `yaml:"borrow_limit"`
	LendLimit   *int    `yaml:"lend_limit"`
}

type tenantEntry struct {
	Name      string  `yaml:"name"`
	Kind      string  `yaml:"kind"`
	Partition string  `yaml:"partition"`
	Weight    float64 `yaml:"weight"`
	// Reservation limits what the tenant may reserve itself; absent, it
	// may not reserve through the API.
	Reservation reserveEntry `yaml:"reservation"`
	// Labels describe the tenant's work to operator policies.
	Labels map[string]string `yaml:"labels"`
	// Budget is what the tenant may spend per month (model.Budget).
	Budget budgetEntry `yaml:"budget"`
	// Classes are the priority classes the tenant may ask for
	// (model.Tenancy.AllowedClasses); absent, the default.
	Classes []className `yaml:"classes"`
}

// className is a priority class named alone: spot, standard or reserved.
type className model.Class

func (c *className) decodeNode(_ *decoder, n *yaml.Node, _ string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a class: spot, standard or reserved, got %s", describe(n))
	}
	v, err := model.ParseClass(n.Value)
	if err != nil {
		return err
	}
	*c = className(v)
	return nil
}

type budgetEntry struct {
	USDPerMonth float64 `yaml:"usd_per_month"`
	HardStop    bool    `yaml:"hard_stop"`
}

type reserveEntry struct {
	MaxCount    int      `yaml:"max_count"`
	MaxDuration duration `yaml:"max_duration"`
}

type quotaEntry struct {
	Tenant string `yaml:"tenant"`
	Region string `yaml:"region"`
	Series string `yaml:"series"`
	GPUs   int    `yaml:"gpus"`
}

type reservationEntry struct {
	Name   string    `yaml:"name"`
	Owner  string    `yaml:"owner"`
	SKU    string    `yaml:"sku"`
	Region string    `yaml:"region"`
	Count  int       `yaml:"count"`
	Start  timestamp `yaml:"start"`
	End    timestamp `yaml:"end"`
}

// ReadTenancy reads the tenants file at path. See ParseTenancy.
func ReadTenancy(path string, fleet *model.Fleet) (*model.Tenancy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tenancy: %w", err)
	}
	return ParseTenancy(path, data, fleet)
}

// ParseTenancy reads a tenants file named name: partitions and their
// guarantees, tenants, quotas and reservations. The tenancy it returns has
// passed model.Tenancy.Validate against fleet, which resolved percentage
// guarantees into GPU counts; any error is an *Error.
func ParseTenancy(name string, data []byte, fleet *model.Fleet) (*model.Tenancy, error) {
	if fleet == nil {
		return nil, &Error{File: name, Msg: "a fleet is needed to check tenants against"}
	}
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	root, err := single(name, docs, "tenants (partitions: …, tenants: …)")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var tf tenancyFile
	if err := d.decode(root, "", reflect.ValueOf(&tf).Elem()); err != nil {
		return nil, err
	}
	t := &model.Tenancy{Strategy: model.Strategy(tf.Strategy)}
	for _, p := range tf.Partitions {
		part := model.Partition{Name: p.Name, Tier: p.Tier, Labels: p.Labels}
		for _, g := range p.Guarantees {
			part.Guarantees = append(part.Guarantees, model.Guarantee{
				Region: g.Region, GPUModel: g.GPUModel, GPUs: g.GPUs, Percent: g.Percent,
				BorrowLimit: g.BorrowLimit, LendLimit: g.LendLimit,
			})
		}
		t.Partitions = append(t.Partitions, part)
	}
	for _, x := range tf.Tenants {
		var classes []model.Class
		for _, c := range x.Classes {
			classes = append(classes, model.Class(c))
		}
		t.Tenants = append(t.Tenants, model.Tenant{
			Name: x.Name, Kind: model.TenantKind(x.Kind), Partition: x.Partition, Weight: x.Weight,
			Reserve: model.ReserveLimits{MaxCount: x.Reservation.MaxCount, MaxDuration: time.Duration(x.Reservation.MaxDuration)},
			Labels:  x.Labels,
			Budget:  model.Budget{USDPerMonth: x.Budget.USDPerMonth, HardStop: x.Budget.HardStop},
			Classes: classes,
		})
	}
	for _, q := range tf.Quotas {
		t.Quotas = append(t.Quotas, model.Quota{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs})
	}
	for _, r := range tf.Reservations {
		t.Reservations = append(t.Reservations, model.Reservation{
			Name: r.Name, Owner: r.Owner, SKU: r.SKU, Region: r.Region, Count: r.Count,
			Start: time.Time(r.Start), End: time.Time(r.End),
		})
	}
	if err := t.Validate(fleet); err != nil {
		return nil, d.fromModel(root, err, nil)
	}
	return t, nil
}
