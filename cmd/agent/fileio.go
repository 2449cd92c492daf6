package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// readFileTool reads lines of a file.
type readFileTool struct{}

func (readFileTool) Name() string { return "read_file" }

func (readFileTool) Schema() json.RawMessage {
	return schema("read_file",
		"Read a text file: relative paths start at the session's working directory. offset is the first line (1-based), limit the number of lines; long results keep their head and tail.",
		map[string]any{
			"path":   prop("string", "the file"),
			"offset": prop("integer", "the first line to read, from 1 (default 1)"),
			"limit":  prop("integer", "how many lines to read (default: to the end)"),
		}, "path")
}

func (readFileTool) NeedsApproval(json.RawMessage) bool { return false }

// readChunk is how much read_file reads at a time: its memory is this
// buffer and the result's head and tail (headTail), whatever the file's
// size or the length of its lines.
const readChunk = 64 << 10

func (readFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decodeArgs("read_file", raw, &args); err != nil {
		return "", err
	}
	if args.Path == "" {
		return "", errors.New("read_file: path is required")
	}
	if args.Offset < 0 || args.Limit < 0 {
		return "", errors.New("read_file: offset and limit must not be negative")
	}
	p, done, err := resolve(env, args.Path)
	if err != nil {
		return "", fmt.Errorf("read_file: %w", err)
	}
	defer done()
	f, err := openRegular(ctx, p.fsys, p.name, args.Path, 0)
	if err != nil {
		return "", fmt.Errorf("read_file: %w", err)
	}
	defer f.Close()
	first := max(args.Offset, 1)
	limit := max(env.MaxOutput, 256)
	out := &headTail{limit: limit}
	buf := make([]byte, readChunk)
	var off int64
	line := 1
	for args.Limit == 0 || line < first+args.Limit {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("read_file: %w", context.Cause(ctx))
		}
		n, err := f.Read(buf)
		chunk := buf[:n]
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			return "", fmt.Errorf("read_file: %s is a binary file (a NUL byte at offset %d)", args.Path, off+int64(i))
		}
		off += int64(n)
		for len(chunk) > 0 && (args.Limit == 0 || line < first+args.Limit) {
			part := chunk
			end := bytes.IndexByte(chunk, '\n')
			if end >= 0 {
				part = chunk[:end+1]
			}
			chunk = chunk[len(part):]
			if line >= first {
				out.Write(part)
			}
			if end >= 0 {
				line++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read_file: %w", err)
		}
	}
	return out.text(limit), nil
}

// writeFileTool writes a whole file atomically.
type writeFileTool struct{}

func (writeFileTool) Name() string { return "write_file" }

func (writeFileTool) Schema() json.RawMessage {
	return schema("write_file",
		"Write a whole text file, replacing it if it exists: relative paths start at the session's working directory; missing directories are made. "+
			"The write is atomic: a reader sees the old file or the new one, never a part.",
		map[string]any{
			"path":    prop("string", "the file"),
			"content": prop("string", "the file's whole new content"),
		}, "path", "content")
}

func (writeFileTool) NeedsApproval(json.RawMessage) bool { return true }

// Run writes the file with replace (write.go). A new file gets 0666 less
// the umask, as an editor would make it. A symlink at the path is refused
// rather than replaced by a file or written through, and so is a file
// without its owner's write bit.
func (writeFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs("write_file", raw, &args); err != nil {
		return "", err
	}
	if args.Path == nil || *args.Path == "" || args.Content == nil {
		return "", errors.New("write_file: path and content are required")
	}
	if err := refuseLoneSurrogate(raw); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	p, done, err := resolve(env, *args.Path)
	if err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	defer done()
	fi, err := p.fsys.Lstat(p.name)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("write_file: %s is a symbolic link; not replaced", *args.Path)
	case err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("write_file: %w", checkRegular(fi, *args.Path))
	case err == nil:
		if err := writable(fi, *args.Path); err != nil {
			return "", fmt.Errorf("write_file: %w", err)
		}
	case errors.Is(err, fs.ErrNotExist):
		fi = nil
	default:
		return "", fmt.Errorf("write_file: %w", err)
	}
	if err := p.fsys.MkdirAll(filepath.Dir(p.name), 0o777); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	note, ck := env.checkpoint(ctx, p, *args.Path, fi, nil, []byte(*args.Content))
	err = replace(p.fsys, p.name, *args.Path, []byte(*args.Content), fi, ck.ready)
	ck.settle(err)
	if err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	return fmt.Sprintf("wrote %d bytes to %s%s", len(*args.Content), p.abs, note), nil
}
