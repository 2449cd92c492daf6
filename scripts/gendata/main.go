// Command gendata writes a profile's sessions for benchmarks, in the
// store's exact formats (see scripts/fixture), and prints their ids one a
// line, oldest first.
//
//	go run ./scripts/gendata -home DIR -sessions N -messages M -bytes-per-message B [-mixed] [-titled] [-other-source S -other-every K]
//
// With -mixed, transcripts have mixed sizes around M messages
// (fixture.MessagesOf): some empty, most small, a few ten times M. With
// -other-every K, every K-th session has source S, the rest "gendata".
// The sessions go to DIR/profiles/<profile>/sessions, which must not hold
// sessions yet. `hermes --home DIR fsck` passes on the result.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/scripts/fixture"
)

func main() {
	home := flag.String("home", "", "hermes home (root) directory; required")
	profile := flag.String("profile", "default", "profile name")
	sessions := flag.Int("sessions", 1, "number of sessions")
	messages := flag.Int("messages", 10, "messages in each transcript")
	bytesPer := flag.Int("bytes-per-message", 200, "about this many bytes of text in each message")
	mixed := flag.Bool("mixed", false, "transcripts of mixed sizes, about -messages on average")
	other := flag.String("other-source", "", "with -other-every, the source of every Nth session")
	every := flag.Int("other-every", 0, "every this many sessions, one has -other-source (0: none)")
	titled := flag.Bool("titled", false, "title each session \"session N\" and write the title index")
	quiet := flag.Bool("q", false, "do not print the ids")
	flag.Parse()
	if *home == "" || flag.NArg() > 0 || *sessions < 0 || *every < 0 || *messages < 0 || *bytesPer < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := fsstore.CheckID("profile", *profile); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(2)
	}
	dir := filepath.Join(*home, "profiles", *profile, "sessions")
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(os.Stderr, "gendata: %s is not empty\n", dir)
		os.Exit(1)
	}
	start := time.Now()
	ids, err := fixture.Write(dir, fixture.Options{
		Sessions:        *sessions,
		Messages:        *messages,
		BytesPerMessage: *bytesPer,
		Mixed:           *mixed,
		Profile:         *profile,
		Titled:          *titled,
		OtherSource:     *other,
		OtherEvery:      *every,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
	size := fmt.Sprintf("%d messages", *messages)
	if *mixed {
		size = "mixed sizes, " + size + " on average"
	}
	fmt.Fprintf(os.Stderr, "gendata: %d sessions of %s in %s (%.1fs)\n", len(ids), size, dir, time.Since(start).Seconds())
	if *quiet {
		return
	}
	w := bufio.NewWriter(os.Stdout)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}
