package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Version is the release's version. scripts/release.sh sets it with
// -ldflags "-X github.com/hermes/hermes/cmd.Version=…"; any other build
// leaves it empty and the version comes from Go's build information.
var Version string

// BuildInfo says what a binary is: the version, the commit it was built
// from and when that commit was made. A release build names its tag; a
// build from a checkout (go build, go install ., scripts/build.sh) names
// "devel" and the commit, which Go stamps into every binary built inside
// a git work tree; a build of a tagged commit, and `go install
// module@vX`, names the tag.
type BuildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	Date     string `json:"date"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// pseudoVersion reports whether v is what Go calls a build of a commit
// that no tag names (v0.0.0-20261124193505-a9ac76bade9e, +dirty with
// changes), or a build without version control ("(devel)", ""): hermes
// says "devel" and names the commit and its date apart.
func pseudoVersion(v string) bool {
	if v == "" || v == "(devel)" {
		return true
	}
	v = strings.TrimSuffix(v, "+dirty")
	// ...-yyyymmddhhmmss-abcdefabcdef: 14 digits, a dash, 12 hex digits.
	if len(v) < 27 || v[len(v)-13] != '-' {
		return false
	}
	for i, c := range v[len(v)-27:] {
		digit := c >= '0' && c <= '9'
		switch {
		case i < 14 && !digit, i > 14 && !digit && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}

// readBuildInfo reads the binary's own build information. The date is
// the commit's, not the clock's at build time, so that two builds of one
// commit are the same bytes.
func readBuildInfo() BuildInfo {
	b := BuildInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if ok && b.Version == "" && !pseudoVersion(info.Main.Version) {
		b.Version = strings.TrimSuffix(info.Main.Version, "+dirty")
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Date = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the line --version prints: "devel (commit 1a2b3c4d5e6f,
// 2026-11-25T10:00:00Z)", with "+changes" after a commit whose work tree
// had uncommitted changes when it was built.
func (b BuildInfo) String() string {
	s := b.Version
	if b.Commit == "" {
		return s
	}
	commit := b.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if b.Modified {
		commit += "+changes"
	}
	s += " (commit " + commit
	if b.Date != "" {
		s += ", " + b.Date
	}
	return s + ")"
}

// manDate is the date a manual page carries: the commit's, so that a
// release's man page is the same bytes on every build; today's for a
// binary built without version control information.
func (b BuildInfo) manDate() string {
	if t, err := time.Parse(time.RFC3339, b.Date); err == nil {
		return t.UTC().Format("2006-01-02")
	}
	return time.Now().UTC().Format("2006-01-02")
}

// --version prints the line the version verb prints ("hermes devel (commit
// …)"), not the library's own "hermes version …": one format to parse.
func init() {
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "hermes %s\n", c.App.Version) }
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print the version, the commit and its date (--json: as fields)",
		ArgsUsage: " ",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments")
			}
			b := readBuildInfo()
			if c.Bool("json") {
				return printJSON(c.App.Writer, b)
			}
			_, err := fmt.Fprintf(c.App.Writer, "hermes %s\n", b)
			return err
		},
	}
}
