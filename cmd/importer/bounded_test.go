package importer

import (
	"errors"
	"io"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// boundedReader plays a file of size bytes, head followed by fill bytes,
// and refuses to be read past limit: the test fails by that error rather
// than by holding the whole file in memory.
type boundedReader struct {
	head        []byte
	fill        byte
	size, limit int64
	read        int64
}

var errPastLimit = errors.New("read past the bound")

func (r *boundedReader) Read(p []byte) (int, error) {
	if r.read >= r.size {
		return 0, io.EOF
	}
	if r.read >= r.limit {
		return 0, errPastLimit
	}
	n := int(min(int64(len(p)), r.size-r.read, r.limit-r.read))
	for i := range n {
		if off := r.read + int64(i); off < int64(len(r.head)) {
			p[i] = r.head[off]
		} else {
			p[i] = r.fill
		}
	}
	r.read += int64(n)
	return n, nil
}

// A 500 MB file that is not a transcript is refused from its first bytes:
// format detection, and the check that every format starts with a JSON
// object, read a bounded prefix (DetectLimit), never the whole file.
func TestNotATranscriptIsRefusedInBoundedMemory(t *testing.T) {
	const size = 500 << 20
	limit := int64(DetectLimit)
	for _, c := range []struct {
		name, format string
		head         string
		fill         byte
	}{
		{"NUL bytes, detected", "", "", 0},
		{"NUL bytes, --format claude-code", FormatClaudeCode, "", 0},
		{"NUL bytes, --format hermes-json", FormatHermesJSON, "", 0},
		{"blank lines", "", "", '\n'},
		{"an unterminated string", "", `{"a":"`, 'x'},
		{"a JSON array", "", "[", ' '},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &boundedReader{head: []byte(c.head), fill: c.fill, size: size, limit: limit}
			_, err := Parse(r, c.format)
			if !errors.Is(err, fsstore.ErrInvalid) {
				t.Fatalf("Parse: %v, want ErrInvalid (read %d bytes)", err, r.read)
			}
			if r.read > limit {
				t.Fatalf("read %d bytes, past the bound %d", r.read, limit)
			}
			if errors.Is(err, errPastLimit) {
				t.Fatalf("Parse read past the bound: %v", err)
			}
			t.Log(err)
		})
	}
}
