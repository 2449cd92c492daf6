package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// ignoreRules are the patterns of one .gitignore file. A path is matched
// as prefix + its path below base: base is the file's directory relative
// to the walk's root ("" for the root, and for a directory above it, whose
// prefix is then the root's path below that directory, ending in /).
//
// What is supported, as git reads it: blank lines and # comments; \ to
// escape a leading # or !, or a trailing space; ! to re-include; a
// trailing / for directories only; a pattern with a / at its start or in
// its middle is anchored to the file's directory, one without matches at
// any depth; *, ?, [...] (with ! or ^ to negate) never match /; a leading
// **/, a trailing /** and a middle /**/ span directories. As in git, a
// file below an ignored directory cannot be re-included. Not read:
// .git/info/exclude and core.excludesFile.
type ignoreRules struct {
	base, prefix string
	rules        []ignoreRule
}

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// maxIgnoreSize bounds a .gitignore file that readIgnore reads; a larger
// one is not read (git's own limit is 100 MB, for files no one writes).
const maxIgnoreSize = 1 << 20

// readIgnore reads dir/.gitignore in fsys through the one reader; a missing file
// has no rules (nil, nil), and one that cannot be read, is not a regular
// file or has more than maxIgnoreSize bytes is an error, which the walk
// counts as something it could not read.
func readIgnore(ctx context.Context, fsys fileSys, dir, base, prefix string) (*ignoreRules, error) {
	path := filepath.Join(dir, ".gitignore")
	b, _, err := readRegular(ctx, fsys, path, path, 0, maxIgnoreSize, func(size int64) error {
		return fmt.Errorf("%s has %d bytes or more, more than the %d read", path, size, maxIgnoreSize)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &ignoreRules{base: base, prefix: prefix}
	for _, line := range strings.Split(string(b), "\n") {
		if rule, ok := parseIgnore(line); ok {
			r.rules = append(r.rules, rule)
		}
	}
	if len(r.rules) == 0 {
		return nil, nil
	}
	return r, nil
}

// parseIgnore reads one line of a .gitignore file.
func parseIgnore(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces go, unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	var r ignoreRule
	if line[0] == '!' {
		r.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	if strings.HasPrefix(line, "/") {
		line = line[1:]
	} else if !strings.Contains(line, "/") {
		line = "**/" + line
	}
	re, err := globRegexp(line)
	if err != nil {
		return ignoreRule{}, false
	}
	r.re = re
	return r, true
}

// match reports whether rel (slash-separated, relative to the walk's
// root, below base) is ignored (true), re-included (false), or neither (ok
// false), by the last rule that matches it.
func (r *ignoreRules) match(rel string, isDir bool) (ignored, ok bool) {
	path := r.prefix + rel
	if r.base != "" {
		path = r.prefix + strings.TrimPrefix(rel, r.base+"/")
	}
	for i := len(r.rules) - 1; i >= 0; i-- {
		rule := r.rules[i]
		if rule.dirOnly && !isDir {
			continue
		}
		if rule.re.MatchString(path) {
			return !rule.negate, true
		}
	}
	return false, false
}

// globRegexp compiles a slash-separated glob, matched against a whole
// slash-separated path: * ? and [...] within a name, ** across names.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case strings.HasPrefix(glob[i:], "**/") && (i == 0 || glob[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
		case glob[i:] == "**" && (i == 0 || glob[i-1] == '/'):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
			for i+1 < len(glob) && glob[i+1] == '*' {
				i++
			}
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end == 0 && i+2 < len(glob) { // a ] first in the class is one of its characters
				end = strings.IndexByte(glob[i+2:], ']') + 1
			}
			if end <= 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			i += end + 1
			b.WriteString("[")
			if class[0] == '!' || class[0] == '^' {
				b.WriteString("^/")
				class = class[1:]
			}
			b.WriteString(strings.NewReplacer(`\`, `\\`, "[", `\[`).Replace(class))
			b.WriteString("]")
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
