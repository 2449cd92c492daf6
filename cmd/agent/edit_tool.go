package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// maxEditSize bounds the file edit_file reads whole into memory; a larger
// file is refused (terminal tools such as sed edit it in a stream).
const maxEditSize = 16 << 20

// editFileTool replaces an exact string in a file.
type editFileTool struct{}

func (editFileTool) Name() string { return "edit_file" }

func (editFileTool) Schema() json.RawMessage {
	return schema("edit_file",
		"Edit a text file by replacing an exact string: relative paths start at the session's working directory. "+
			"old_string must occur exactly once (give more context around it to make it unique), or set replace_all. "+
			"Nothing is written when it is missing or ambiguous. The file keeps its mode and its line endings (a CRLF file may be matched with LF), "+
			"and is replaced atomically.",
		map[string]any{
			"path":        prop("string", "the file"),
			"old_string":  prop("string", "the exact text to replace"),
			"new_string":  prop("string", "the text to put in its place"),
			"replace_all": prop("boolean", "replace every occurrence (default: old_string must occur once)"),
		}, "path", "old_string", "new_string")
}

func (editFileTool) NeedsApproval(json.RawMessage) bool { return true }

// Run reads the file, counts old_string in it, and writes the result with
// write.go's replace, keeping the file's mode. In a file whose lines end
// with CRLF (its first line end is CRLF), old_string and new_string are
// taken with their line ends as CRLF, so a model that writes LF matches
// and the file does not get mixed line ends.
func (editFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Path       *string `json:"path"`
		OldString  *string `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if err := decodeArgs("edit_file", raw, &args); err != nil {
		return "", err
	}
	switch {
	case args.Path == nil || *args.Path == "" || args.OldString == nil || args.NewString == nil:
		return "", errors.New("edit_file: path, old_string and new_string are required")
	case *args.OldString == "":
		return "", errors.New("edit_file: old_string is empty (write_file creates or rewrites a whole file)")
	case *args.OldString == *args.NewString:
		return "", errors.New("edit_file: old_string and new_string are the same; nothing to change")
	}
	if err := refuseLoneSurrogate(raw); err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	p, done, err := resolve(env, *args.Path)
	if err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	defer done()
	content, fi, err := readForEdit(ctx, p, *args.Path)
	if err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	if i := bytes.IndexByte(content, 0); i >= 0 {
		return "", fmt.Errorf("edit_file: %s is a binary file (a NUL byte at offset %d)", *args.Path, i)
	}
	// The before-image is stored while the new bytes are made: an edit
	// refused below leaves it stored for the file's next change.
	ck := env.startCheckpoint(ctx, p, *args.Path, fi, content)
	text := string(content)
	old, repl := *args.OldString, *args.NewString
	if crlf(text) {
		old, repl = toCRLF(old), toCRLF(repl)
	}
	n := occurrences(text, old)
	switch {
	case n == 0:
		ck.drop()
		return "", fmt.Errorf("edit_file: old_string not found in %s; nothing written (read_file shows the current text)", *args.Path)
	case n > 1 && !args.ReplaceAll:
		ck.drop()
		return "", fmt.Errorf("edit_file: old_string occurs %d times in %s; nothing written (give more context to make it unique, or set replace_all)", n, *args.Path)
	case n != strings.Count(text, old):
		ck.drop()
		return "", fmt.Errorf("edit_file: old_string occurs %d times in %s, and some of them overlap; nothing written (give more context to make each one distinct)", n, *args.Path)
	}
	after := []byte(strings.ReplaceAll(text, old, repl))
	note, f := ck.then(after)
	err = replace(p.fsys, p.name, *args.Path, after, fi, f.ready)
	f.settle(err)
	if err != nil {
		return "", fmt.Errorf("edit_file: %w", err)
	}
	if n == 1 {
		return fmt.Sprintf("replaced 1 occurrence in %s%s", p.abs, note), nil
	}
	return fmt.Sprintf("replaced %d occurrences in %s%s", n, p.abs, note), nil
}

// readForEdit reads the file at p (named as the model gave it) whole,
// with its FileInfo, through the one reader, refusing a read-only file: without following a symbolic
// link, refusing anything but a regular file without blocking on it, and
// at most maxEditSize bytes.
func readForEdit(ctx context.Context, p place, name string) ([]byte, fs.FileInfo, error) {
	b, fi, err := readRegular(ctx, p.fsys, p.name, name, syscall.O_NOFOLLOW, maxEditSize, func(size int64) error {
		return fmt.Errorf("%s has %d bytes or more, more than the %d edit_file edits", name, size, maxEditSize)
	})
	if err == nil {
		err = writable(fi, name)
	}
	if err != nil {
		return nil, nil, err
	}
	return b, fi, nil
}

// occurrences counts s in text at every offset: "aa" occurs twice in
// "aaa", where strings.Count finds one.
func occurrences(text, s string) int {
	n := 0
	for i := 0; ; n++ {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return n
		}
		i += j + 1
	}
}

// crlf reports whether text's first line ends with CRLF.
func crlf(text string) bool {
	i := strings.IndexByte(text, '\n')
	return i > 0 && text[i-1] == '\r'
}

// toCRLF makes every line end of s CRLF.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
