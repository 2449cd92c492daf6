package cmd

import "testing"

func TestPseudoVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"":                                   true,
		"(devel)":                            true,
		"v0.0.0-20261124193505-a9ac76bade9e": true,
		"v0.0.0-20261124193505-a9ac76bade9e+dirty": true,
		"v0.1.1-0.20261124193505-a9ac76bade9e":     true,
		"v0.1.0":                                   false,
		"v0.1.0+dirty":                             false,
		"v1.2.3-rc.1":                              false,
		"v0.0.0-2026112419350x-a9ac76bade9e":       false,
		"v0.0.0-20261124193505-a9ac76bade9g":       false,
		"v0.0.0-20261124193505_a9ac76bade9e":       false,
	} {
		if got := pseudoVersion(v); got != want {
			t.Errorf("pseudoVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
