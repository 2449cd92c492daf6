package usage

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hermes/hermes/fsstore"
)

func TestTableOf(t *testing.T) {
	var p Pricing
	if err := yaml.Unmarshal([]byte("gpt-4o*: {input: 9, output: 9}\ngpt-4o-2024-08-06: {input: 1, output: 2}\nlocal-*: {input: 0}\n"), &p); err != nil {
		t.Fatal(err)
	}
	tab := Table{Config: p}
	for _, tc := range []struct {
		model string
		input float64 // -1: no price
	}{
		{"gpt-4o-2024-08-06", 1},          // the config's exact name first
		{"gpt-4o-mini-2024-07-18", 9},     // then its pattern, before the shipped table's longer one
		{"claude-sonnet-4-5-20250929", 3}, // the shipped table
		{"claude-opus-4-5-20251101", 5},   // its longest pattern: not claude-opus-4-1's price
		{"gpt-5-mini-2025-08-07", 0.25},   // gpt-5-mini*, not gpt-5*
		{"local-7b", 0},                   // a price of 0 is a price
		{"mystery", -1},
	} {
		pr, ok := tab.Of(tc.model)
		got := -1.0
		if ok && pr.Input != nil {
			got = *pr.Input
		}
		if got != tc.input {
			t.Errorf("%s: input price %v, want %v", tc.model, got, tc.input)
		}
	}
}

func TestPriceCost(t *testing.T) {
	sonnet, _ := Table{}.Of("claude-sonnet-4-5")
	c := Call{Input: 1e6, Output: 1e6, CacheRead: 1e6, CacheWrite5m: 1e6, CacheWrite1h: 1e6}
	if cost, ok := sonnet.Cost(c); !ok || cost != 3+15+0.3+3.75+6 {
		t.Errorf("cost %v %v", cost, ok)
	}
	// OpenAI's input counts the cache reads: they are priced once, as reads.
	gpt, _ := Table{}.Of("gpt-4o")
	if cost, ok := gpt.Cost(Call{Input: 2e6, CacheRead: 1e6, InputHasCache: true}); !ok || cost != 2.5+1.25 {
		t.Errorf("cost %v %v", cost, ok)
	}
	// A kind of token the price does not name: no price, never 0.
	var in float64 = 1
	if cost, ok := (Price{Input: &in}).Cost(Call{Input: 5, Output: 1}); ok {
		t.Errorf("priced at %v without an output price", cost)
	}
	if cost, ok := (Price{Input: &in}).Cost(Call{Input: 1e6}); !ok || cost != 1 {
		t.Errorf("cost %v %v", cost, ok)
	}
}

func TestPricingRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"gpt-4o: {input: cheap}", `pricing.gpt-4o.input: line 1: "cheap" is not a price`},
		{"gpt-4o: {input: -1}", `pricing.gpt-4o.input: line 1: "-1" is not a price`},
		{"gpt-4o: {input: .nan}", `pricing.gpt-4o.input: line 1: ".nan" is not a price`},
		{"gpt-4o: {input: [1]}", `pricing.gpt-4o.input: line 1: "" is not a price`},
		{"gpt-4o: {cache_write: 1}", `pricing.gpt-4o.cache_write: line 1: unknown price`},
		{"gpt-4o: 3", `pricing.gpt-4o: line 1: want a map`},
		{"'gpt-[': {input: 1}", `pricing.gpt-[: line 1: a bad pattern`},
		{"[1, 2]", `pricing: line 1: want a map`},
	} {
		var p Pricing
		err := yaml.Unmarshal([]byte(tc.yaml), &p)
		if err == nil || !errors.Is(err, fsstore.ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.yaml, err, tc.want)
		}
	}
}
