package savings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultHoursPerMonth is the hours a month is priced at when none is given: 365 × 24 / 12,
// the convention most price lists use. It is an example, not a fact about any bill.
const DefaultHoursPerMonth = 730

// PricingConfigMap is the name of the ConfigMap, in Ballast's release namespace, that
// holds the prices (the chart renders it from the pricing.* values).
const PricingConfigMap = "ballast-pricing"

// Keys of the ballast-pricing ConfigMap.
const (
	KeyCPUCoreHour   = "cpu-core-hour"   // price of one cpu core requested for an hour
	KeyMemoryGiBHour = "memory-gib-hour" // price of one GiB of memory requested for an hour
	KeyHoursPerMonth = "hours-per-month" // hours in a priced month (default 730)
	KeyCurrency      = "currency"        // a label printed with the costs ("USD", "€"); optional
)

// Prices are what a requested cpu core and GiB of memory cost per hour. Ballast knows no
// price list: they are the user's figures, in the user's currency.
type Prices struct {
	CPUCoreHour   float64 `json:"cpuCoreHour"`
	MemoryGiBHour float64 `json:"memoryGiBHour"`
	HoursPerMonth float64 `json:"hoursPerMonth"`
	Currency      string  `json:"currency,omitempty"`
}

// Set reports whether any price is given; without one there are no costs.
func (p Prices) Set() bool { return p.CPUCoreHour > 0 || p.MemoryGiBHour > 0 }

// hours is HoursPerMonth, or DefaultHoursPerMonth when unset.
func (p Prices) hours() float64 {
	if p.HoursPerMonth > 0 {
		return p.HoursPerMonth
	}
	return DefaultHoursPerMonth
}

// Monthly is what a requests for a month.
func (p Prices) Monthly(a Amount) float64 {
	return p.hours() * (a.Cores()*p.CPUCoreHour + a.GiB()*p.MemoryGiBHour)
}

// WithDefaults returns p with HoursPerMonth filled in.
func (p Prices) WithDefaults() Prices {
	p.HoursPerMonth = p.hours()
	return p
}

// Override returns p with every value of o that is set (> 0, non-empty) taking its place:
// flags over the ConfigMap.
func (p Prices) Override(o Prices) Prices {
	if o.CPUCoreHour > 0 {
		p.CPUCoreHour = o.CPUCoreHour
	}
	if o.MemoryGiBHour > 0 {
		p.MemoryGiBHour = o.MemoryGiBHour
	}
	if o.HoursPerMonth > 0 {
		p.HoursPerMonth = o.HoursPerMonth
	}
	if o.Currency != "" {
		p.Currency = o.Currency
	}
	return p
}

// ParsePrices reads the data of the ballast-pricing ConfigMap. Absent or empty keys stay
// unset; a value that is not a finite number ≥ 0 is an error naming the key.
func ParsePrices(data map[string]string) (Prices, error) {
	var p Prices
	for key, dst := range map[string]*float64{KeyCPUCoreHour: &p.CPUCoreHour, KeyMemoryGiBHour: &p.MemoryGiBHour,
		KeyHoursPerMonth: &p.HoursPerMonth} {
		v := strings.TrimSpace(data[key])
		if v == "" {
			continue
		}
		f, err := ParsePrice(v)
		if err != nil {
			return Prices{}, fmt.Errorf("%s %q: %w", key, v, err)
		}
		*dst = f
	}
	p.Currency = strings.TrimSpace(data[KeyCurrency])
	return p, nil
}

// ParsePrice reads one price: a finite decimal ≥ 0.
func ParsePrice(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("must be a decimal number >= 0")
	}
	return f, nil
}
