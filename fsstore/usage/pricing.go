package usage

import (
	"math"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes/hermes/fsstore"
)

// Price is what one model's tokens cost, in US dollars per million
// tokens, by kind; a kind left nil has no price.
type Price struct {
	Input        *float64 `json:"input,omitempty"`
	Output       *float64 `json:"output,omitempty"`
	CacheRead    *float64 `json:"cache_read,omitempty"`
	CacheWrite5m *float64 `json:"cache_write_5m,omitempty"`
	CacheWrite1h *float64 `json:"cache_write_1h,omitempty"`
}

// Cost is what c cost at p, and whether p prices it: every kind of token
// c used has a price (a kind c did not use needs none).
func (p Price) Cost(c Call) (float64, bool) {
	cost := 0.0
	for _, k := range []struct {
		n     int64
		price *float64
	}{{c.Fresh(), p.Input}, {c.Output, p.Output}, {c.CacheRead, p.CacheRead}, {c.CacheWrite5m, p.CacheWrite5m}, {c.CacheWrite1h, p.CacheWrite1h}} {
		if k.n == 0 {
			continue
		}
		if k.price == nil {
			return 0, false
		}
		cost += float64(k.n) * *k.price / 1e6
	}
	return cost, true
}

// Pricing is config.yaml's pricing: a Price by model name, or by pattern
// (path.Match: "claude-sonnet-4-5*").
type Pricing map[string]Price

// priceKinds are the names of a pricing entry's keys.
var priceKinds = []string{"input", "output", "cache_read", "cache_write_5m", "cache_write_1h"}

// UnmarshalYAML reads pricing, refusing what is not a price with an
// fsstore.ErrInvalid error naming its key (pricing.gpt-4o.input): an
// entry that is not a map, a kind it does not know, a price that is not
// a number at or above 0, a bad pattern.
func (p *Pricing) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fsstore.Invalidf("pricing: line %d: want a map of model names to prices", n.Line)
	}
	out := Pricing{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		model := k.Value
		if model == "" {
			return fsstore.Invalidf("pricing: line %d: an empty model name", k.Line)
		}
		if _, err := path.Match(model, ""); err != nil {
			return fsstore.Invalidf("pricing.%s: line %d: a bad pattern: %v", model, k.Line, err)
		}
		if v.Kind != yaml.MappingNode {
			return fsstore.Invalidf("pricing.%s: line %d: want a map of %s", model, v.Line, strings.Join(priceKinds, ", "))
		}
		var pr Price
		for j := 0; j+1 < len(v.Content); j += 2 {
			kk, vv := v.Content[j], v.Content[j+1]
			var f float64
			if vv.Kind != yaml.ScalarNode || vv.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return fsstore.Invalidf("pricing.%s.%s: line %d: %q is not a price (US dollars per million tokens, 0 or more)", model, kk.Value, vv.Line, vv.Value)
			}
			switch kk.Value {
			case "input":
				pr.Input = &f
			case "output":
				pr.Output = &f
			case "cache_read":
				pr.CacheRead = &f
			case "cache_write_5m":
				pr.CacheWrite5m = &f
			case "cache_write_1h":
				pr.CacheWrite1h = &f
			default:
				return fsstore.Invalidf("pricing.%s.%s: line %d: unknown price (want %s)", model, kk.Value, kk.Line, strings.Join(priceKinds, ", "))
			}
		}
		out[model] = pr
	}
	*p = out
	return nil
}

// find returns the price p holds for model: its exact name, else the
// longest pattern that matches it (the first in byte order among equals).
func (p Pricing) find(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best := ""
	for k := range p {
		if ok, _ := path.Match(k, model); ok && (len(k) > len(best) || len(k) == len(best) && k < best) {
			best = k
		}
	}
	if best == "" {
		return Price{}, false
	}
	return p[best], true
}

// Table is the prices a report uses: the profile's pricing, then the
// shipped table for a model it does not price.
type Table struct {
	Config Pricing
}

// Of returns model's price and whether there is one.
func (t Table) Of(model string) (Price, bool) {
	if pr, ok := t.Config.find(model); ok {
		return pr, true
	}
	return shipped.find(model)
}

// memo is Of, remembering each model's answer: a report prices every
// call, and a lookup tries every pattern.
func (t Table) memo() func(model string) (Price, bool) {
	type answer struct {
		p  Price
		ok bool
	}
	seen := map[string]answer{}
	return func(model string) (Price, bool) {
		a, ok := seen[model]
		if !ok {
			a.p, a.ok = t.Of(model)
			seen[model] = a
		}
		return a.p, a.ok
	}
}

// ShippedDate is the day the shipped prices were taken from the
// providers' price pages.
const ShippedDate = "2025-11-25"

func usd(f float64) *float64 { return &f }

// anthropic is a Claude model's price: cache reads at a tenth of the
// input price, writes at 1.25 (five minutes) and 2 times (an hour).
func anthropic(in, out float64) Price {
	return Price{Input: usd(in), Output: usd(out), CacheRead: usd(in / 10), CacheWrite5m: usd(in * 1.25), CacheWrite1h: usd(in * 2)}
}

// openai is an OpenAI model's price: cached input at its own price;
// OpenAI charges nothing for writing the cache.
func openai(in, cached, out float64) Price {
	return Price{Input: usd(in), Output: usd(out), CacheRead: usd(cached), CacheWrite5m: usd(0), CacheWrite1h: usd(0)}
}

// shipped are the prices of common models on ShippedDate, by pattern so
// that dated snapshots (claude-sonnet-4-5-20250929) match.
var shipped = Pricing{
	"claude-opus-4-5*":    anthropic(5, 25),
	"claude-opus-4-1*":    anthropic(15, 75),
	"claude-opus-4-2025*": anthropic(15, 75),
	"claude-opus-4":       anthropic(15, 75),
	"claude-sonnet-4*":    anthropic(3, 15),
	"claude-3-7-sonnet*":  anthropic(3, 15),
	"claude-haiku-4-5*":   anthropic(1, 5),
	"claude-3-5-haiku*":   anthropic(0.8, 4),
	"gpt-5*":              openai(1.25, 0.125, 10),
	"gpt-5-mini*":         openai(0.25, 0.025, 2),
	"gpt-5-nano*":         openai(0.05, 0.005, 0.4),
	"gpt-4.1*":            openai(2, 0.5, 8),
	"gpt-4.1-mini*":       openai(0.4, 0.1, 1.6),
	"gpt-4.1-nano*":       openai(0.1, 0.025, 0.4),
	"gpt-4o*":             openai(2.5, 1.25, 10),
	"gpt-4o-mini*":        openai(0.15, 0.075, 0.6),
	"o3*":                 openai(2, 0.5, 8),
	"o4-mini*":            openai(1.1, 0.275, 4.4),
}
