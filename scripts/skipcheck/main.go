// Command skipcheck reads go test -json on stdin, prints what a plain go
// test would (each package's result line, the output of the tests that
// failed, build errors), and exits 1 when a test was skipped that is not
// on the list of tests allowed to skip, or when a test failed.
//
//	go test -json ./... | go run ./scripts/skipcheck .ci/skips
//
// A list has one test a line, its package (as go list names it) and its
// name separated by a space; blank lines and lines starting with # are
// ignored. .ci/run runs every test run through it, so that a test CI
// expects to run cannot pass by skipping itself (a missing tool, a lost
// privilege): every skip outside the list fails CI, with its reason.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ./... | skipcheck LIST...")
		os.Exit(2)
	}
	allowed := map[string]bool{}
	for _, path := range os.Args[1:] {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
			os.Exit(2)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				allowed[strings.Join(strings.Fields(line), " ")] = true
			}
		}
	}
	bad, failed, err := check(os.Stdin, os.Stdout, allowed)
	if err != nil {
		fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
		os.Exit(2)
	}
	if len(bad) > 0 {
		fmt.Printf("skipcheck: %d tests skipped that CI expects to run:\n", len(bad))
		for _, b := range bad {
			fmt.Println(b)
		}
	}
	if len(bad) > 0 || failed {
		os.Exit(1)
	}
}

// check reads go test -json from r and writes to w what go test would
// print without -json. It returns the skips not in allowed (each with
// its reason) and whether anything failed.
func check(r io.Reader, w io.Writer, allowed map[string]bool) (bad []string, failed bool, err error) {
	output := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, false, fmt.Errorf("%v: %.200s", err, line)
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test == "" && e.Action == "output":
			if o := strings.TrimSpace(e.Output); o != "PASS" && !strings.HasPrefix(o, "=== ") {
				fmt.Fprint(w, e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
		case e.Action == "output":
			output[key] = append(output[key], e.Output)
		case e.Action == "fail":
			failed = true
			fmt.Fprint(w, strings.Join(output[key], ""))
			delete(output, key)
		case e.Test == "":
			// A package's own pass or skip (no test files).
		case e.Action == "skip":
			if !allowed[key] {
				bad = append(bad, key+": "+skipReason(output[key]))
			}
			delete(output, key)
		case e.Action == "pass":
			delete(output, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, err
	}
	sort.Strings(bad)
	return bad, failed, nil
}

// skipReason is the message of a skipped test: the first line of its
// output that a t.Skip wrote ("file_test.go:12: why"; a script's skip is
// written the same way, beside testscript.go's log of the script), or its
// output's other lines when none is.
func skipReason(lines []string) string {
	var reason []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if i := strings.Index(t, ".go:"); i > 0 && !strings.Contains(t[:i], " ") && !strings.HasPrefix(t, "testscript.go:") {
			return t
		}
		if t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
			reason = append(reason, t)
		}
	}
	if len(reason) == 0 {
		return "no reason given"
	}
	return strings.Join(reason, " ")
}
