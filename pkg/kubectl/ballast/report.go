package ballast

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/savings"
)

// Output formats of report beyond table|json|yaml.
const (
	outCSV  = "csv"
	outHTML = "html"
)

var reportSortKeys = []string{"name", "savings", "cpu", "memory"}

type reportOptions struct {
	*globals
	output           string
	sortBy           string
	selector         string
	ballastNamespace string
	prices           savings.Prices
}

func newReportCommand(g *globals) *cobra.Command {
	o := &reportOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "report [PROFILE...]",
		Short: "What right-sizing saves: requested vs recommended vs used, reclaimable capacity and its monthly cost",
		Long: `Report, per WorkloadProfile, per namespace and for the cluster, the cpu and memory the
bound pods request (REQ), what they would request at the profile's recommendation (REC), what
they use (P50, P95 of the profile's usage statistics, once per pod), and the reclaimable
capacity: per container max(0, request - recommendation), summed over the pods currently
running the profile (n uniform replicas count n times). Containers below their
recommendation are reported as the shortfall, never netted against the savings.

Costs are priced from --price-cpu-hour and --price-gib-hour, else from the ConfigMap
ballast-pricing in Ballast's namespace (keys cpu-core-hour, memory-gib-hour,
hours-per-month, currency); a month is 730 hours unless told otherwise. Without a price the
report has no costs.

-o html writes a self-contained page (inline SVG charts, no scripts) to stdout.`,
		Example: `  kubectl ballast report --price-cpu-hour 0.031 --price-gib-hour 0.0042
  kubectl ballast report -n shop -o csv > shop.csv
  kubectl ballast report -l team=payments --sort-by savings
  kubectl ballast report -o html > savings.html`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	addOutputFlag(cmd, &o.output, "table", outJSON, outYAML, outCSV, outHTML)
	cmd.Flags().StringVar(&o.sortBy, "sort-by", "name", "sort profile rows by: "+fmt.Sprint(reportSortKeys)+" (numbers: reclaimable, largest first)")
	_ = cmd.RegisterFlagCompletionFunc("sort-by", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return reportSortKeys, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "count only pods matching this label selector (and list only profiles with such pods)")
	cmd.Flags().StringVar(&o.ballastNamespace, "ballast-namespace", ballastv1.DefaultOperatorNamespace, "namespace of Ballast's release, where the ballast-pricing ConfigMap lives")
	priceFlag(cmd, &o.prices.CPUCoreHour, "price-cpu-hour", "price of one requested cpu core for an hour (overrides the ConfigMap's cpu-core-hour)")
	priceFlag(cmd, &o.prices.MemoryGiBHour, "price-gib-hour", "price of one requested GiB of memory for an hour (overrides memory-gib-hour)")
	priceFlag(cmd, &o.prices.HoursPerMonth, "hours-per-month", "hours in a priced month (overrides hours-per-month; default 730)")
	cmd.Flags().StringVar(&o.prices.Currency, "currency", "", "label printed with costs, e.g. USD (overrides currency)")
	return cmd
}

// priceFlag registers a float flag that must be a finite number ≥ 0.
func priceFlag(cmd *cobra.Command, dst *float64, name, usage string) {
	cmd.Flags().Var(&priceValue{dst}, name, usage)
}

type priceValue struct{ p *float64 }

func (v *priceValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return fmt.Sprint(*v.p)
}

func (v *priceValue) Set(s string) error {
	f, err := savings.ParsePrice(s)
	if err != nil {
		return err
	}
	*v.p = f
	return nil
}

func (v *priceValue) Type() string { return "price" }

// reportDoc is the report as printed by -o json|yaml|csv|html.
type reportDoc struct {
	// PricesFrom says where the prices came from: "flags", "ConfigMap NS/ballast-pricing",
	// both, or "none".
	PricesFrom string `json:"pricesFrom"`
	savings.Report
	// Notes are what the table prints under it (prices not readable, and so on).
	Notes []string `json:"notes,omitempty"`
}

func (o *reportOptions) run(cmd *cobra.Command, names []string) error {
	if err := checkOutput(o.output, outJSON, outYAML, outCSV, outHTML); err != nil {
		return err
	}
	if !slices.Contains(reportSortKeys, o.sortBy) {
		return usageError("unknown --sort-by %q: must be one of %v", o.sortBy, reportSortKeys)
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return usageError("--selector %q: %v", o.selector, err)
	}
	ns, err := o.namespace(cmd, true)
	if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	doc := &reportDoc{}
	prices := o.loadPrices(cmd, c, doc)
	items, err := reportItems(cmd, c, ns, sel, names)
	if err != nil {
		return err
	}
	doc.Report = savings.Build(items, prices)
	sortReport(doc.Profiles, o.sortBy)
	switch o.output {
	case outJSON, outYAML:
		return printStructured(o.out(), o.output, doc)
	case outCSV:
		return printReportCSV(o.out(), doc)
	case outHTML:
		return printReportHTML(o.out(), doc)
	}
	return printReport(o.out(), doc)
}

// loadPrices reads the ballast-pricing ConfigMap and lays the price flags over it. A
// ConfigMap that is missing, unreadable or invalid leaves a note, never an error: the
// figures in cores and bytes stand without prices.
func (o *reportOptions) loadPrices(cmd *cobra.Command, c client.Client, doc *reportDoc) savings.Prices {
	var from []string
	var base savings.Prices
	cm := &corev1.ConfigMap{}
	err := c.Get(cmd.Context(), client.ObjectKey{Namespace: o.ballastNamespace, Name: savings.PricingConfigMap}, cm)
	where := o.ballastNamespace + "/" + savings.PricingConfigMap
	switch {
	case err == nil:
		p, perr := savings.ParsePrices(cm.Data)
		if perr != nil {
			doc.Notes = append(doc.Notes, fmt.Sprintf("ConfigMap %s ignored: %v", where, perr))
			break
		}
		if p != (savings.Prices{}) {
			base = p
			from = append(from, "ConfigMap "+where)
		}
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		doc.Notes = append(doc.Notes, fmt.Sprintf("ConfigMap %s not readable (forbidden); give --price-cpu-hour and --price-gib-hour", where))
	default:
		doc.Notes = append(doc.Notes, fmt.Sprintf("ConfigMap %s not read: %v", where, err))
	}
	for _, f := range []string{"price-cpu-hour", "price-gib-hour", "hours-per-month", "currency"} {
		if cmd.Flags().Changed(f) {
			from = append(from, "flags")
			break
		}
	}
	prices := base.Override(o.prices)
	doc.PricesFrom = "none"
	if len(from) > 0 {
		doc.PricesFrom = from[0]
		if len(from) > 1 {
			doc.PricesFrom += " and " + from[1]
		}
	}
	if !prices.Set() {
		doc.Notes = append(doc.Notes, "no prices: costs need --price-cpu-hour/--price-gib-hour or the ballast-pricing ConfigMap")
	}
	return prices
}

// reportItems lists the profiles and their bound pods (savings.Counts) in ns (all when "")
// matching sel. With a namespace, a selector or names, only profiles with such pods (or of
// those names) are kept.
func reportItems(cmd *cobra.Command, c client.Client, ns string, sel labels.Selector, names []string) ([]savings.Item, error) {
	ctx := cmd.Context()
	wps := &ballastv1.WorkloadProfileList{}
	if err := c.List(ctx, wps); err != nil {
		return nil, fmt.Errorf("listing WorkloadProfiles: %w", err)
	}
	enrolledReq, err := labels.NewRequirement(ballastv1.ModeLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel.Add(*enrolledReq)}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	byProfile := map[string][]savings.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := p.Annotations[ballastv1.ProfileRefAnnotation]; ref != "" && savings.Counts(p) {
			byProfile[ref] = append(byProfile[ref], savings.PodOf(p))
		}
	}
	filtered := ns != "" || !sel.Empty()
	items := make([]savings.Item, 0, len(wps.Items))
	for i := range wps.Items {
		wp := &wps.Items[i]
		if len(names) > 0 && !slices.Contains(names, wp.Name) {
			continue
		}
		bound := byProfile[wp.Name]
		if filtered && len(bound) == 0 {
			continue
		}
		items = append(items, savings.Item{Profile: savings.ParseProfile(wp), Pods: bound})
	}
	if len(names) > 0 && len(items) == 0 && !filtered {
		return nil, &exitError{code: ExitUsage, err: errors.New("no WorkloadProfile of those names")}
	}
	return items, nil
}

func sortReport(rows []savings.ProfileRow, key string) {
	num := func(r savings.ProfileRow) float64 {
		switch key {
		case "cpu":
			return float64(r.Reclaimable.MilliCPU)
		case "memory":
			return float64(r.Reclaimable.MemoryBytes)
		case "savings":
			if r.Cost != nil {
				return r.Cost.Savings
			}
			return r.Reclaimable.Cores() + r.Reclaimable.GiB() // unpriced: cores + GiB
		}
		return 0
	}
	slices.SortStableFunc(rows, func(a, b savings.ProfileRow) int {
		if key == "name" {
			return cmp.Compare(a.Name, b.Name)
		}
		return cmp.Or(cmp.Compare(num(b), num(a)), cmp.Compare(a.Name, b.Name))
	})
}
