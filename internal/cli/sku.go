package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newSKUCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("sku", "See the machine types each region sells, and what is free",
		`sku shows the SKUs (machine types) of the fleet: their GPUs, price, and how
many nodes and GPUs of each are free now in each region.`, conn)
	cmd.AddCommand(newSKUListCmd(conn))
	return cmd
}

func newSKUListCmd(conn *connection) *cobra.Command {
	var region, series string
	cmd := &cobra.Command{
		Use:   "list [--region R] [--series S]",
		Short: "List the SKUs of every region, or of one, with free capacity and prices",
		Long: `list shows each SKU sold in each region (in one with --region): its series
(ND for training nodes on InfiniBand, NC for inference), GPU model and count
per node, how many of its nodes and GPUs are free now, how many nodes
reservations active now hold (RESERVED: only their owners' work, and spot
work while they idle, runs there, free or not), and its on-demand and spot
price per node-hour in that region (the fleet file's prices:, else the SKU's
catalog rates).
The spot price is the one a spot job starting now would pay: its floor,
rising with the region's GPU utilisation to the on-demand price when full
(docs/cost.md). Any token may list SKUs.`,
		Example: `  allot sku list
  allot sku list --region eastus
  allot sku list --region westeurope --series ND -o json`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			skus, err := cl.SKUs(cmd.Context(), region, series)
			if err != nil {
				return fromAPI(err)
			}
			if skus == nil {
				skus = []client.SKU{}
			}
			v := struct {
				SKUs []client.SKU `json:"skus"`
			}{skus}
			return show(cmd.OutOrStdout(), f, v, func() printer {
				t := table{header: []string{"NAME", "SERIES", "GPU", "GPUS/NODE", "REGION", "NODES", "FREE NODES", "RESERVED", "FREE GPUS", "$/HOUR", "SPOT $/HOUR"}}
				for _, s := range skus {
					t.add(s.Name, s.Series, s.GPUModel, strconv.Itoa(s.GPUsPerNode), s.Region, strconv.Itoa(s.Nodes),
						strconv.Itoa(s.FreeNodes), strconv.Itoa(s.ReservedNodes), gpus(s.FreeGPUs), price(s.PricePerHour), price(s.SpotPricePerHour))
				}
				return t
			})
		},
	}
	cmd.Flags().StringVar(&region, "region", "", "only this region, e.g. eastus (default: every region)")
	cmd.Flags().StringVar(&series, "series", "", "only SKUs of this series, e.g. ND or NC")
	_ = cmd.RegisterFlagCompletionFunc("series", cobra.FixedCompletions([]string{"ND", "NC"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// price writes a price per hour, or "-" when there is none.
func price(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", p)
}
