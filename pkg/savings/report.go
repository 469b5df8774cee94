package savings

import (
	"cmp"
	"slices"
)

// Item is one profile and its bound pods (those for which Counts holds).
type Item struct {
	Profile Profile
	Pods    []Pod
}

// ProfileRow is one profile's figures.
type ProfileRow struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Figures
}

// NamespaceRow is one namespace's figures: its pods of every profile.
type NamespaceRow struct {
	Namespace string `json:"namespace"`
	// Profiles counts the profiles with pods in the namespace.
	Profiles int `json:"profiles"`
	Figures
}

// Report is the figures per profile, per namespace and in total.
type Report struct {
	Prices     Prices         `json:"prices"`
	Profiles   []ProfileRow   `json:"profiles"`
	Namespaces []NamespaceRow `json:"namespaces"`
	Total      Figures        `json:"total"`
}

// Build computes the report of items at prices: one row per item in the given order, one
// row per namespace sorted by name, and the total. Every figure is a sum over pods, so the
// total equals both the sum of the profile rows and the sum of the namespace rows.
func Build(items []Item, prices Prices) Report {
	prices = prices.WithDefaults()
	rep := Report{Prices: prices, Profiles: make([]ProfileRow, 0, len(items)), Namespaces: []NamespaceRow{}}
	byNS := map[string]*NamespaceRow{}
	for _, it := range items {
		row := ProfileRow{Name: it.Profile.Name, State: it.Profile.State}
		for _, group := range byNamespace(it.Pods) {
			f := it.Profile.Figures(group)
			row.Add(f)
			ns := byNS[group[0].Namespace]
			if ns == nil {
				ns = &NamespaceRow{Namespace: group[0].Namespace}
				byNS[ns.Namespace] = ns
			}
			ns.Profiles++
			ns.Add(f)
		}
		row.Price(prices)
		rep.Total.Add(row.Figures)
		rep.Profiles = append(rep.Profiles, row)
	}
	for _, ns := range byNS {
		ns.Price(prices)
		rep.Namespaces = append(rep.Namespaces, *ns)
	}
	slices.SortFunc(rep.Namespaces, func(a, b NamespaceRow) int { return cmp.Compare(a.Namespace, b.Namespace) })
	rep.Total.Price(prices)
	return rep
}

// byNamespace splits pods into one group per namespace, in the order namespaces first
// appear; most profiles have pods in one namespace, which needs no copy.
func byNamespace(pods []Pod) [][]Pod {
	if len(pods) == 0 {
		return nil
	}
	same := true
	for _, p := range pods[1:] {
		if p.Namespace != pods[0].Namespace {
			same = false
			break
		}
	}
	if same {
		return [][]Pod{pods}
	}
	index := map[string]int{}
	var groups [][]Pod
	for _, p := range pods {
		i, ok := index[p.Namespace]
		if !ok {
			i = len(groups)
			index[p.Namespace] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}
