package fsstore

import "testing"

// TestCacheCodec: a decoder reads back what an encoder wrote; a file cut
// at any byte, with a byte more, or of another magic is not Done, and a
// count larger than the bytes left is refused.
func TestCacheCodec(t *testing.T) {
	const magic = "hermes test cache 1\n"
	e := NewCacheEncoder(magic)
	e.Uint(2)
	e.Text("é§\x00")
	e.Int(-1 << 62)
	e.Uint(1 << 63)
	e.Text("")
	b := e.Bytes()
	d := NewCacheDecoder(b, magic)
	if n, s, i, u, empty := d.Count(), d.Text(), d.Int(), d.Uint(), d.Text(); n != 2 || s != "é§\x00" || i != -1<<62 || u != 1<<63 || empty != "" || !d.Done() {
		t.Fatalf("read back %d %q %d %d %q, done %v", n, s, i, u, empty, d.Done())
	}
	read := func(b []byte, magic string) bool {
		d := NewCacheDecoder(b, magic)
		d.Count()
		d.Text()
		d.Int()
		d.Uint()
		d.Text()
		return d.Done()
	}
	for n := range len(b) {
		if read(b[:n], magic) {
			t.Errorf("cut at %d of %d: done", n, len(b))
		}
	}
	if read(append(b, 0), magic) {
		t.Error("a byte more: done")
	}
	if read(b, "hermes test cache 2\n") {
		t.Error("another magic: done")
	}
	big := NewCacheEncoder(magic)
	big.Uint(1 << 40)
	if d := NewCacheDecoder(big.Bytes(), magic); d.Count() != 0 || d.OK() {
		t.Error("a count past the end: accepted")
	}
}
