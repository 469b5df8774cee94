package ballast

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

type profilesOptions struct {
	*globals
	output string
	sortBy string
}

var profileSortKeys = []string{"name", "state", "pods", "workloads", "cpu-saving", "memory-saving"}

func newProfilesCommand(g *globals) *cobra.Command {
	o := &profilesOptions{globals: g}
	cmd := &cobra.Command{
		Use:     "profiles [NAME...]",
		Aliases: []string{"profile"},
		Short:   "List WorkloadProfiles: requests vs recommendation vs usage, and the potential saving",
		Long: `List every WorkloadProfile with its state, the workloads and pods bound to it and, per
resource, the requests of the bound pods summed (REQ), what the same pods would request at
the profile's recommendation (REC) and their observed mean usage (USE). SAVING is REQ - REC
in cpu cores and memory GiB (negative: the pods are under-provisioned); the last row sums it.

Pods are the live enrolled pods carrying the profile's profile-ref annotation. With -n only
pods of that namespace are counted and only profiles with such pods are listed.`,
		Example: `  kubectl ballast profiles
  kubectl ballast profiles -n shop --sort-by cpu-saving
  kubectl ballast profiles -o json | jq '.total'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return o.completeProfiles(cmd)
		},
	}
	addOutputFlag(cmd, &o.output, "table", outWide, outJSON, outYAML)
	cmd.Flags().StringVar(&o.sortBy, "sort-by", "name", "sort rows by: "+fmt.Sprint(profileSortKeys))
	_ = cmd.RegisterFlagCompletionFunc("sort-by", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return profileSortKeys, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// resourceSum is one resource of a profile row in whole units (millicores, bytes).
type resourceSum struct {
	Request        int64 `json:"request"`
	Recommendation int64 `json:"recommendation"`
	// Usage is the observed mean usage of the bound pods' containers, summed; nil when the
	// profile has no statistics for them yet.
	Usage  *int64 `json:"usage,omitempty"`
	Saving int64  `json:"saving"`
}

type profileRow struct {
	Name      string                 `json:"name"`
	State     string                 `json:"state"`
	Policy    string                 `json:"policy,omitempty"`
	Workloads int                    `json:"workloads"`
	Pods      int                    `json:"pods"`
	Resources map[string]resourceSum `json:"resources"` // cpu in millicores, others in bytes
	// Fallback: samples from metrics.k8s.io and pods without a live node agent.
	Fallback *fallbackInfo `json:"fallback,omitempty"`
}

type profilesReport struct {
	Profiles []profileRow `json:"profiles"`
	Total    struct {
		Pods int `json:"pods"`
		// Savings: cpu in cores, memory and ephemeral-storage in GiB.
		CPUCores             float64 `json:"cpuCoresSaving"`
		MemoryGiB            float64 `json:"memoryGiBSaving"`
		EphemeralStorageGiB  float64 `json:"ephemeralStorageGiBSaving"`
		RequestCPUCores      float64 `json:"cpuCoresRequested"`
		RequestMemoryGiB     float64 `json:"memoryGiBRequested"`
		RecommendedCPUCores  float64 `json:"cpuCoresRecommended"`
		RecommendedMemoryGiB float64 `json:"memoryGiBRecommended"`
	} `json:"total"`
}

var profileResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

func (o *profilesOptions) run(cmd *cobra.Command, names []string) error {
	if err := checkOutput(o.output, outWide, outJSON, outYAML); err != nil {
		return err
	}
	if !slices.Contains(profileSortKeys, o.sortBy) {
		return usageError("unknown --sort-by %q: must be one of %v", o.sortBy, profileSortKeys)
	}
	ns, err := o.namespace(cmd, true)
	if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	rep, err := buildProfiles(cmd, c, ns, names)
	if err != nil {
		return err
	}
	sortProfiles(rep.Profiles, o.sortBy)
	switch o.output {
	case outJSON, outYAML:
		return printStructured(o.out(), o.output, rep)
	}
	return printProfiles(o.out(), rep, o.output == outWide)
}

func buildProfiles(cmd *cobra.Command, c client.Client, ns string, names []string) (*profilesReport, error) {
	ctx := cmd.Context()
	wps := &ballastv1.WorkloadProfileList{}
	if err := c.List(ctx, wps); err != nil {
		return nil, fmt.Errorf("listing WorkloadProfiles: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.HasLabels{ballastv1.ModeLabel}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	byProfile := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := p.Annotations[ballastv1.ProfileRefAnnotation]; ref != "" && enrolled(p) {
			byProfile[ref] = append(byProfile[ref], p)
		}
	}
	lookup := ownerLookup(ctx, c)
	rep := &profilesReport{Profiles: []profileRow{}}
	totals := map[corev1.ResourceName]*resourceSum{}
	for _, r := range profileResources {
		totals[r] = &resourceSum{}
	}
	for i := range wps.Items {
		wp := &wps.Items[i]
		if len(names) > 0 && !slices.Contains(names, wp.Name) {
			continue
		}
		bound := byProfile[wp.Name]
		if ns != "" && len(bound) == 0 {
			continue
		}
		row := profileRow{Name: wp.Name, State: cmp.Or(wp.Status.State, ballastv1.StateAccruing),
			Policy: policyRefString(wp.Status.PolicyRef), Pods: len(bound), Resources: map[string]resourceSum{},
			Fallback: fallbackOf(wp)}
		workloads := map[string]bool{}
		for _, p := range bound {
			kind, name, _ := policy.TopLevel(p.Name, p.Namespace, p.OwnerReferences, lookup)
			workloads[p.Namespace+"/"+kind+"/"+name] = true
		}
		row.Workloads = len(workloads)
		for _, r := range profileResources {
			s := sumResource(wp, bound, r)
			row.Resources[string(r)] = s
			t := totals[r]
			t.Request += s.Request
			t.Recommendation += s.Recommendation
			t.Saving += s.Saving
		}
		rep.Total.Pods += row.Pods
		rep.Profiles = append(rep.Profiles, row)
	}
	rep.Total.CPUCores = cores(totals[corev1.ResourceCPU].Saving)
	rep.Total.MemoryGiB = gib(totals[corev1.ResourceMemory].Saving)
	rep.Total.EphemeralStorageGiB = gib(totals[corev1.ResourceEphemeralStorage].Saving)
	rep.Total.RequestCPUCores = cores(totals[corev1.ResourceCPU].Request)
	rep.Total.RequestMemoryGiB = gib(totals[corev1.ResourceMemory].Request)
	rep.Total.RecommendedCPUCores = cores(totals[corev1.ResourceCPU].Recommendation)
	rep.Total.RecommendedMemoryGiB = gib(totals[corev1.ResourceMemory].Recommendation)
	return rep, nil
}

// sumResource sums res over the bound pods' long-running containers: the current request,
// the request at the profile's recommendation (the current one where the profile has none
// for that container), and the observed mean usage.
func sumResource(wp *ballastv1.WorkloadProfile, pods []*corev1.Pod, res corev1.ResourceName) resourceSum {
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	usage := map[string]int64{}
	for _, cp := range wp.Status.Containers {
		for _, us := range cp.UsageStats {
			if us.Resource == string(res) && us.Samples > 0 {
				if v, ok := parseStat(res, us.Mean); ok {
					usage[cp.Name] = v
				}
			}
		}
	}
	var s resourceSum
	var used int64
	hasUsage := false
	for _, p := range pods {
		for _, ctr := range longRunning(&p.Spec) {
			var cur int64
			if q, ok := ctr.Resources.Requests[res]; ok {
				cur = int64(sizing.UnitsOf(res, q))
			}
			rec := cur
			if r, ok := recs[ctr.Name][res]; ok && r.HasRequest {
				rec = int64(r.Request)
			}
			s.Request += cur
			s.Recommendation += rec
			if u, ok := usage[ctr.Name]; ok {
				used += u
				hasUsage = true
			}
		}
	}
	if hasUsage {
		s.Usage = &used
	}
	s.Saving = s.Request - s.Recommendation
	return s
}

// parseStat reads a usageStats value ("230m", "176.00Mi") in whole units.
func parseStat(res corev1.ResourceName, v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, false
	}
	return int64(sizing.UnitsOf(res, q)), true
}

func policyRefString(r *ballastv1.PolicyRef) string {
	if r == nil {
		return ""
	}
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}

func sortProfiles(rows []profileRow, key string) {
	num := func(r profileRow) int64 {
		switch key {
		case "pods":
			return int64(r.Pods)
		case "workloads":
			return int64(r.Workloads)
		case "cpu-saving":
			return r.Resources[string(corev1.ResourceCPU)].Saving
		case "memory-saving":
			return r.Resources[string(corev1.ResourceMemory)].Saving
		}
		return 0
	}
	slices.SortStableFunc(rows, func(a, b profileRow) int {
		switch key {
		case "name":
			return cmp.Compare(a.Name, b.Name)
		case "state":
			return cmp.Or(cmp.Compare(a.State, b.State), cmp.Compare(a.Name, b.Name))
		}
		return cmp.Or(cmp.Compare(num(b), num(a)), cmp.Compare(a.Name, b.Name)) // largest first
	})
}

func cores(milli int64) float64 { return float64(milli) / 1000 }
func gib(bytes int64) float64   { return float64(bytes) / (1 << 30) }

func printProfiles(w io.Writer, rep *profilesReport, wide bool) error {
	t := newTable(w)
	head := []string{"PROFILE", "STATE", "WORKLOADS", "PODS", "CPU REQ", "CPU REC", "CPU USE", "MEM REQ", "MEM REC", "MEM USE", "CPU SAVING", "MEM SAVING"}
	if wide {
		head = append(head, "EPHEMERAL REQ", "EPHEMERAL REC", "EPHEMERAL USE", "POLICY", "FALLBACK")
	}
	t.row(head...)
	for _, r := range rep.Profiles {
		c, m := r.Resources[string(corev1.ResourceCPU)], r.Resources[string(corev1.ResourceMemory)]
		cells := []string{r.Name, r.State, strconv.Itoa(r.Workloads), strconv.Itoa(r.Pods),
			amount(corev1.ResourceCPU, c.Request), amount(corev1.ResourceCPU, c.Recommendation), usageCell(corev1.ResourceCPU, c.Usage),
			amount(corev1.ResourceMemory, m.Request), amount(corev1.ResourceMemory, m.Recommendation), usageCell(corev1.ResourceMemory, m.Usage),
			fmt.Sprintf("%.2f", cores(c.Saving)), fmt.Sprintf("%.2fGi", gib(m.Saving))}
		if wide {
			e := r.Resources[string(corev1.ResourceEphemeralStorage)]
			cells = append(cells, amount(corev1.ResourceEphemeralStorage, e.Request), amount(corev1.ResourceEphemeralStorage, e.Recommendation),
				usageCell(corev1.ResourceEphemeralStorage, e.Usage), cmp.Or(r.Policy, "<none>"), r.Fallback.cell())
		}
		t.row(cells...)
	}
	total := []string{"TOTAL", "", "", strconv.Itoa(rep.Total.Pods), "", "", "", "", "", "",
		fmt.Sprintf("%.2f", rep.Total.CPUCores), fmt.Sprintf("%.2fGi", rep.Total.MemoryGiB)}
	t.row(total...)
	if err := t.flush(); err != nil {
		return err
	}
	return fallbackNote(w, rep, wide)
}

// fallbackNote says, under the table, which profiles hold samples from metrics.k8s.io or
// have pods on nodes without a live node agent (the wide view has a column for it).
func fallbackNote(w io.Writer, rep *profilesReport, wide bool) error {
	if wide {
		return nil
	}
	var names []string
	for _, r := range rep.Profiles {
		if r.Fallback != nil {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nmeasured partly without a node agent (metrics.k8s.io fallback): %s; see -o wide or kubectl ballast explain\n",
		strings.Join(names, ", "))
	return err
}

// amount renders whole units the way profile statistics are displayed (SPEC §2.4).
func amount(res corev1.ResourceName, v int64) string {
	return recommend.FormatStat(string(res), float64(v))
}

func usageCell(res corev1.ResourceName, v *int64) string {
	if v == nil {
		return "-"
	}
	return amount(res, *v)
}

// completeProfiles completes WorkloadProfile names.
func (o *profilesOptions) completeProfiles(cmd *cobra.Command) ([]string, cobra.ShellCompDirective) {
	c, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	wps := &ballastv1.WorkloadProfileList{}
	if err := c.List(cmd.Context(), wps); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, wp := range wps.Items {
		out = append(out, wp.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
