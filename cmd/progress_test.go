package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// The bar is drawn on the first step, not again within progressEvery,
// always at the last step, and erased by clear; a nil bar draws nothing.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, what: "importing", total: 4}
	p.step()
	first := b.String()
	if !strings.HasPrefix(first, "\r\x1b[Kimporting [") || !strings.HasSuffix(first, "] 1/4") {
		t.Fatalf("first step drew %q", first)
	}
	if strings.Count(first, "=") != progressWidth/4 {
		t.Fatalf("a quarter done drew %q", first)
	}
	p.step()
	p.step()
	if b.String() != first {
		t.Fatalf("steps within progressEvery drew %q", b.String()[len(first):])
	}
	p.step()
	last := b.String()[len(first):]
	if !strings.HasSuffix(last, "] 4/4") || strings.Count(last, "=") != progressWidth {
		t.Fatalf("the last step drew %q", last)
	}
	p.clear()
	if !strings.HasSuffix(b.String(), "4/4\r\x1b[K") {
		t.Fatalf("clear wrote %q", b.String())
	}

	var none *progress
	none.step()
	none.clear()
}
