package ballast

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/savings"
)

// printReport writes the profile table, the namespace table (when pods run in more than
// one namespace or a namespace was asked for) and the notes.
func printReport(w io.Writer, doc *reportDoc) error {
	if _, err := fmt.Fprintf(w, "Prices: %s\n\n", pricesLine(doc)); err != nil {
		return err
	}
	t := newTable(w)
	t.row(append([]string{"PROFILE", "STATE", "PODS"}, figureHead(doc)...)...)
	for _, r := range doc.Profiles {
		t.row(append([]string{r.Name, r.State, strconv.Itoa(r.Pods)}, figureCells(r.Figures)...)...)
	}
	t.row(append([]string{"TOTAL", "", strconv.Itoa(doc.Total.Pods)}, figureCells(doc.Total)...)...)
	if err := t.flush(); err != nil {
		return err
	}
	if len(doc.Namespaces) > 0 {
		fmt.Fprintln(w)
		t = newTable(w)
		t.row(append([]string{"NAMESPACE", "PROFILES", "PODS"}, figureHead(doc)...)...)
		for _, r := range doc.Namespaces {
			t.row(append([]string{r.Namespace, strconv.Itoa(r.Profiles), strconv.Itoa(r.Pods)}, figureCells(r.Figures)...)...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	notes := doc.Notes
	if s := doc.Total.Shortfall; s.MilliCPU > 0 || s.MemoryBytes > 0 {
		n := fmt.Sprintf("under-provisioned containers: the recommendations add %s cpu and %s memory", cpuAmount(s.MilliCPU), memAmount(s.MemoryBytes))
		if doc.Total.Cost != nil {
			n += fmt.Sprintf(" (%s/month), not netted against the savings", money(doc, doc.Total.Cost.Shortfall))
		}
		notes = append(notes, n)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "note:", n); err != nil {
			return err
		}
	}
	return nil
}

func pricesLine(doc *reportDoc) string {
	p := doc.Prices
	if !p.Set() {
		return "none (no costs; see --price-cpu-hour, --price-gib-hour)"
	}
	cur := ""
	if p.Currency != "" {
		cur = " " + p.Currency
	}
	return fmt.Sprintf("%s%s per cpu core-hour, %s%s per GiB-hour, %s hours/month (from %s)",
		num(p.CPUCoreHour), cur, num(p.MemoryGiBHour), cur, num(p.HoursPerMonth), doc.PricesFrom)
}

func figureHead(doc *reportDoc) []string {
	h := []string{"CPU REQ", "CPU REC", "CPU P50", "CPU P95", "MEM REQ", "MEM REC", "MEM P50", "MEM P95", "CPU RECLAIM", "MEM RECLAIM"}
	if doc.Prices.Set() {
		h = append(h, "COST/MONTH", "SAVINGS/MONTH")
	}
	return h
}

func figureCells(f savings.Figures) []string {
	used := func(v string) string {
		if !f.Measured {
			return "-"
		}
		return v
	}
	cells := []string{cpuAmount(f.Requested.MilliCPU), cpuAmount(f.Recommended.MilliCPU),
		used(cpuAmount(f.UsedP50.MilliCPU)), used(cpuAmount(f.UsedP95.MilliCPU)),
		memAmount(f.Requested.MemoryBytes), memAmount(f.Recommended.MemoryBytes),
		used(memAmount(f.UsedP50.MemoryBytes)), used(memAmount(f.UsedP95.MemoryBytes)),
		cpuAmount(f.Reclaimable.MilliCPU), memAmount(f.Reclaimable.MemoryBytes)}
	if f.Cost != nil {
		cells = append(cells, fixed2(f.Cost.Requested), fixed2(f.Cost.Savings))
	}
	return cells
}

func cpuAmount(milli int64) string { return amount(corev1.ResourceCPU, milli) }
func memAmount(bytes int64) string {
	if bytes == 0 {
		return "0"
	}
	return amount(corev1.ResourceMemory, bytes)
}
func fixed2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func num(v float64) string    { return strconv.FormatFloat(v, 'f', -1, 64) }

func money(doc *reportDoc, v float64) string {
	if doc.Prices.Currency != "" {
		return fixed2(v) + " " + doc.Prices.Currency
	}
	return fixed2(v)
}

// printReportCSV writes one record per profile, namespace and the total, every amount in
// whole units (millicores, bytes) and costs with two decimals (empty without prices).
func printReportCSV(w io.Writer, doc *reportDoc) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"scope", "name", "state", "profiles", "pods",
		"cpu_requested_millicores", "cpu_recommended_millicores", "cpu_used_p50_millicores", "cpu_used_p95_millicores",
		"memory_requested_bytes", "memory_recommended_bytes", "memory_used_p50_bytes", "memory_used_p95_bytes",
		"cpu_reclaimable_millicores", "memory_reclaimable_bytes", "cpu_shortfall_millicores", "memory_shortfall_bytes",
		"cost_requested_month", "cost_recommended_month", "savings_month", "currency"})
	rec := func(scope, name, state, profiles string, f savings.Figures) {
		i := func(v int64) string { return strconv.FormatInt(v, 10) }
		used := func(v int64) string {
			if !f.Measured {
				return ""
			}
			return i(v)
		}
		row := []string{scope, name, state, profiles, strconv.Itoa(f.Pods),
			i(f.Requested.MilliCPU), i(f.Recommended.MilliCPU), used(f.UsedP50.MilliCPU), used(f.UsedP95.MilliCPU),
			i(f.Requested.MemoryBytes), i(f.Recommended.MemoryBytes), used(f.UsedP50.MemoryBytes), used(f.UsedP95.MemoryBytes),
			i(f.Reclaimable.MilliCPU), i(f.Reclaimable.MemoryBytes), i(f.Shortfall.MilliCPU), i(f.Shortfall.MemoryBytes)}
		if f.Cost != nil {
			row = append(row, fixed2(f.Cost.Requested), fixed2(f.Cost.Recommended), fixed2(f.Cost.Savings), doc.Prices.Currency)
		} else {
			row = append(row, "", "", "", "")
		}
		_ = cw.Write(row)
	}
	for _, r := range doc.Profiles {
		rec("profile", r.Name, r.State, "", r.Figures)
	}
	for _, r := range doc.Namespaces {
		rec("namespace", r.Namespace, "", strconv.Itoa(r.Profiles), r.Figures)
	}
	rec("total", "", "", strconv.Itoa(len(doc.Profiles)), doc.Total)
	cw.Flush()
	return cw.Error()
}
