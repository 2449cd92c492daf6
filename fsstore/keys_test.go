package fsstore

import (
	"errors"
	"strings"
	"testing"
)

// An idempotency key is refused blank or past MaxKeyLen, and names the
// file its record has always been kept under (the first 16 bytes of its
// SHA-256 in hex), so that records written before are found.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "  \t", strings.Repeat("k", MaxKeyLen+1)} {
		if err := CheckKey(key); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckKey(%.20q…) = %v, want ErrInvalid", key, err)
		}
	}
	for _, key := range []string{"k1", strings.Repeat("k", MaxKeyLen), "a/../b"} {
		if err := CheckKey(key); err != nil {
			t.Errorf("CheckKey(%.20q…) = %v", key, err)
		}
	}
	if got, want := KeyName("k1"), "6ab9f1eb8f7d3388f4f9d586f66e99fd"; got != want {
		t.Errorf("KeyName(k1) = %s, want %s", got, want)
	}
	if err := CheckID("key record", KeyName("a/../b")); err != nil {
		t.Errorf("KeyName of a key with a path in it: %v", err)
	}
}
