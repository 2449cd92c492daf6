package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// Bounds of search_files and find_files.
const (
	defaultMaxResults = 100
	maxMaxResults     = 1000
	// maxLineText is how much of a matching line a result shows: a longer
	// one (minified code, a data file) is cut around its match.
	maxLineText = 300
	// searchChunk is what a search reads of a file at a time; a line
	// longer than maxSearchChunk is searched in pieces of that size.
	searchChunk    = 256 << 10
	maxSearchChunk = 4 << 20
	maxFound       = 1000
)

// searchFilesTool searches the files of a tree with a regular expression.
type searchFilesTool struct{}

// binarySniff is how much of a file search_files looks at for a NUL byte
// before it takes the file for binary and skips it, as grep -r does: a
// search reads many files, and most binary files say so at once.
const binarySniff = 8 << 10

func (searchFilesTool) Name() string { return "search_files" }

func (searchFilesTool) Schema() json.RawMessage {
	return schema("search_files",
		"Search the text files of a directory tree with a regular expression (Go RE2 syntax), like grep -rn: one line per matching line, path:line:text. "+
			"Skips .git, binary files and what .gitignore files ignore. Paths start at path (default the session's working directory).",
		map[string]any{
			"pattern":     prop("string", "the regular expression; ^ and $ match at line ends"),
			"path":        prop("string", "the directory (or file) to search (default the working directory)"),
			"glob":        prop("string", "only files whose name matches this glob (*.go), or whose path below path does (cmd/**/*.go)"),
			"ignore_case": prop("boolean", "match letters in either case"),
			"max_results": prop("integer", fmt.Sprintf("at most this many lines (default %d, at most %d)", defaultMaxResults, maxMaxResults)),
		}, "pattern")
}

func (searchFilesTool) NeedsApproval(json.RawMessage) bool { return false }

func (searchFilesTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		IgnoreCase bool   `json:"ignore_case"`
		MaxResults int    `json:"max_results"`
	}
	if err := decodeArgs("search_files", raw, &args); err != nil {
		return "", err
	}
	if args.Pattern == "" {
		return "", errors.New("search_files: pattern is required")
	}
	if args.MaxResults < 0 {
		return "", errors.New("search_files: max_results must not be negative")
	}
	limit := args.MaxResults
	if limit == 0 {
		limit = defaultMaxResults
	}
	limit = min(limit, maxMaxResults)
	flags := "(?m)"
	if args.IgnoreCase {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + args.Pattern)
	if err != nil {
		return "", fmt.Errorf("search_files: pattern: %v", err)
	}
	filter, err := nameFilter(args.Glob)
	if err != nil {
		return "", fmt.Errorf("search_files: glob: %v", err)
	}
	root, done, err := resolve(env, firstNonEmpty(args.Path, "."))
	if err != nil {
		return "", fmt.Errorf("search_files: %w", err)
	}
	defer done()
	fi, err := root.fsys.Stat(root.name)
	if err != nil {
		return "", fmt.Errorf("search_files: %w", err)
	}
	var lines []string
	var skipped int
	switch {
	case fi.Mode().IsRegular():
		if lines, err = searchFile(ctx, root.fsys, root.name, args.Path, re, limit); err != nil {
			return "", fmt.Errorf("search_files: %w", err)
		}
	case fi.IsDir():
		lines, skipped = searchTree(ctx, &tree{fsys: root.fsys, root: root.name}, args.Path, re, filter, limit)
	default:
		return "", fmt.Errorf("search_files: %s is neither a directory nor a regular file", args.Path)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	switch {
	case len(lines) >= limit:
		fmt.Fprintf(&b, "[stopped at %d matching lines (max_results); narrow the pattern, the path or the glob]\n", limit)
	case len(lines) == 0:
		b.WriteString("no matches\n")
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "[%d files or directories could not be read]\n", skipped)
	}
	return cut(b.String(), max(env.MaxOutput, 256)), nil
}

// nameFilter matches a file's path below the search's root against glob:
// a glob without / matches the name at any depth. An empty glob matches
// all.
func nameFilter(glob string) (func(rel string) bool, error) {
	if glob == "" {
		return func(string) bool { return true }, nil
	}
	glob = strings.TrimPrefix(glob, "/")
	if !strings.Contains(glob, "/") {
		glob = "**/" + glob
	}
	re, err := globRegexp(glob)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

func firstNonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// searchTree searches the files of t on as many workers as the
// machine has processors, and returns the matching lines in the walk's
// order, at most limit of them, and the count of what could not be read.
// Each file's paths are shown below shown (the path as the model gave
// it; none for the working directory).
func searchTree(ctx context.Context, t *tree, shown string, re *regexp.Regexp, filter func(string) bool, limit int) ([]string, int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		lines   []string
		skipped bool
	}
	type job struct {
		abs, name string
		out       chan result
	}
	jobs := make(chan job)
	order := make(chan job, 256)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		t.walk(ctx, func(rel string, d fs.DirEntry) bool {
			if d.IsDir() || !filter(rel) {
				return true
			}
			j := job{abs: filepath.Join(t.root, filepath.FromSlash(rel)), name: path.Join(filepath.ToSlash(shown), rel), out: make(chan result, 1)}
			for _, ch := range []chan job{order, jobs} {
				select {
				case ch <- j:
				case <-ctx.Done():
					return false
				}
			}
			return true
		})
	}()
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					j.out <- result{}
					continue
				}
				lines, err := searchFile(ctx, t.fsys, j.abs, j.name, re, limit)
				j.out <- result{lines, err != nil}
			}
		}()
	}
	var lines []string
	skipped := 0
	for j := range order {
		r := <-j.out
		if r.skipped {
			skipped++
		}
		lines = append(lines, r.lines[:min(len(r.lines), limit-len(lines))]...)
		if len(lines) >= limit {
			break
		}
	}
	cancel()
	// Drain what the walk queued before it saw the cancel; the workers
	// answer every job they took, into a buffered channel.
	for range order {
	}
	wg.Wait()
	return lines, skipped + t.skipped
}

// chunkPool holds the buffers searchFile reads into, searchChunk bytes
// each (one grown for a long line is not kept).
var chunkPool = sync.Pool{New: func() any { b := make([]byte, searchChunk); return &b }}

// searchFile returns the lines of the file at abs in fsys that re matches, at most
// limit, as name:line:text. A binary file (a NUL in its first 8 KiB) has
// none. The file is read a chunk at a time, so memory stays bounded
// whatever its size, through the one reader: a FIFO or a link put in the
// file's place meanwhile is refused, a read that does not answer given up.
func searchFile(ctx context.Context, fsys fileSys, abs, name string, re *regexp.Regexp, limit int) ([]string, error) {
	f, err := openRegular(ctx, fsys, abs, name, syscall.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	pooled := chunkPool.Get().(*[]byte)
	defer func() {
		if !f.lost { // a read given up on may still fill the buffer
			chunkPool.Put(pooled)
		}
	}()
	buf := *pooled
	filled := 0
	lineNo := 1
	first := true
	for {
		n, err := io.ReadFull(f, buf[filled:])
		filled += n
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return out, err
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(filled, binarySniff)], 0) >= 0 {
				return nil, nil
			}
		}
		// Search whole lines; the last, partial one waits for more,
		// unless the file ended or the buffer holds nothing else.
		end := filled
		if !eof {
			if i := bytes.LastIndexByte(buf[:filled], '\n'); i >= 0 {
				end = i + 1
			} else if len(buf) < maxSearchChunk {
				buf = append(buf, make([]byte, len(buf))...)
				continue
			}
		}
		chunk := buf[:end]
		pos := 0
		for pos < len(chunk) && len(out) < limit {
			loc := re.FindIndex(chunk[pos:])
			if loc == nil {
				break
			}
			start := pos + loc[0]
			ls := bytes.LastIndexByte(chunk[:start], '\n') + 1
			le := bytes.IndexByte(chunk[start:], '\n')
			if le < 0 {
				le = len(chunk)
			} else {
				le += start
			}
			lineNo += bytes.Count(chunk[pos:ls], []byte{'\n'})
			out = append(out, fmt.Sprintf("%s:%d:%s", name, lineNo, lineText(chunk[ls:le], start-ls)))
			pos = le + 1
			if le < len(chunk) {
				lineNo++
			}
		}
		if len(out) >= limit || eof {
			return out, nil
		}
		if pos < end {
			lineNo += bytes.Count(chunk[pos:], []byte{'\n'})
		}
		filled = copy(buf, buf[end:filled])
	}
}

// lineText is a matching line as a result shows it: without its CR, cut to
// maxLineText bytes around the match at off.
func lineText(line []byte, off int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= maxLineText {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	from := max(0, min(off-maxLineText/3, len(line)-maxLineText))
	s := strings.ToValidUTF8(string(line[from:from+maxLineText]), "")
	if from > 0 {
		s = "…" + s
	}
	if from+maxLineText < len(line) {
		s += "…"
	}
	return s
}

// findFilesTool lists the names in a tree that match a glob.
type findFilesTool struct{}

func (findFilesTool) Name() string { return "find_files" }

func (findFilesTool) Schema() json.RawMessage {
	return schema("find_files",
		"List the files (and directories, shown with a trailing /) of a directory tree whose name matches a glob (*.go), or whose path below path does (cmd/**/*_test.go). "+
			"Skips .git and what .gitignore files ignore. Paths start at path (default the session's working directory).",
		map[string]any{
			"glob": prop("string", "the glob: * and ? within a name, ** across directories, [abc] a character of a set"),
			"path": prop("string", "the directory to look in (default the working directory)"),
		}, "glob")
}

func (findFilesTool) NeedsApproval(json.RawMessage) bool { return false }

func (findFilesTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Glob string `json:"glob"`
		Path string `json:"path"`
	}
	if err := decodeArgs("find_files", raw, &args); err != nil {
		return "", err
	}
	if args.Glob == "" {
		return "", errors.New("find_files: glob is required")
	}
	filter, err := nameFilter(args.Glob)
	if err != nil {
		return "", fmt.Errorf("find_files: glob: %v", err)
	}
	root, done, err := resolve(env, firstNonEmpty(args.Path, "."))
	if err != nil {
		return "", fmt.Errorf("find_files: %w", err)
	}
	defer done()
	if fi, err := root.fsys.Stat(root.name); err != nil {
		return "", fmt.Errorf("find_files: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("find_files: %s is not a directory", args.Path)
	}
	var b strings.Builder
	found := 0
	t := &tree{fsys: root.fsys, root: root.name}
	t.walk(ctx, func(rel string, d fs.DirEntry) bool {
		if !filter(rel) {
			return true
		}
		b.WriteString(path.Join(filepath.ToSlash(args.Path), rel))
		if d.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
		found++
		return found < maxFound
	})
	if err := ctx.Err(); err != nil {
		return "", err
	}
	switch {
	case found >= maxFound:
		fmt.Fprintf(&b, "[stopped at %d names; narrow the glob or the path]\n", maxFound)
	case found == 0:
		b.WriteString("no matches\n")
	}
	if t.skipped > 0 {
		fmt.Fprintf(&b, "[%d files or directories could not be read]\n", t.skipped)
	}
	return cut(b.String(), max(env.MaxOutput, 256)), nil
}
