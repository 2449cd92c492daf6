package main

import (
	"reflect"
	"strings"
	"testing"
)

const run = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: needs tmux: apt-get install tmux\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"run","Package":"p","Test":"TestS"}
{"Action":"output","Package":"p","Test":"TestS","Output":"    testscript.go:609: WORK=$WORK\n"}
{"Action":"output","Package":"p","Test":"TestS","Output":"    cmd.go:380: needs curl: apt-get install curl\n"}
{"Action":"skip","Package":"p","Test":"TestS"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: quiet\n"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`

// A skip on the list passes; one off it is reported with its reason (a
// testscript skip's too); a package without tests is no skipped test; a
// passing test's output is not printed, the package's result line is.
func TestSkipOffTheList(t *testing.T) {
	var out strings.Builder
	bad, failed, err := check(strings.NewReader(run), &out, map[string]bool{"p TestB": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p TestA: a_test.go:9: needs tmux: apt-get install tmux", "p TestS: cmd.go:380: needs curl: apt-get install curl"}
	if !reflect.DeepEqual(bad, want) {
		t.Fatalf("bad = %q, want %q", bad, want)
	}
	if failed {
		t.Fatal("failed with no failure")
	}
	if out.String() != "?   \tq\t[no test files]\nok  \tp\t0.1s\n" {
		t.Fatalf("printed %q", out.String())
	}
}

// A failed test is printed with its output and counted.
func TestFailurePrinted(t *testing.T) {
	in := `{"Action":"output","Package":"p","Test":"TestF","Output":"    f_test.go:5: got 1\n"}
{"Action":"output","Package":"p","Test":"TestF","Output":"--- FAIL: TestF (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestF"}
{"Action":"fail","Package":"p"}
`
	var out strings.Builder
	bad, failed, err := check(strings.NewReader(in), &out, nil)
	if err != nil || len(bad) != 0 || !failed {
		t.Fatalf("bad %q, failed %v, err %v", bad, failed, err)
	}
	if !strings.Contains(out.String(), "f_test.go:5: got 1") {
		t.Fatalf("printed %q", out.String())
	}
}
