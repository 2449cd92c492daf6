package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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

// Run writes a temp file beside the target, syncs it, renames it over the
// target and syncs the directory. An existing file keeps its mode; a new
// one gets 0666 less the umask, as an editor would make it. A symlink at
// the path is refused rather than replaced by a file or written through.
func (writeFileTool) Run(_ context.Context, env *Env, raw json.RawMessage) (string, error) {
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
	p, done, err := resolve(env, *args.Path)
	if err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	defer done()
	var mode fs.FileMode
	existing := false
	fi, err := p.fsys.Lstat(p.name)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("write_file: %s is a symbolic link; not replaced", *args.Path)
	case err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("write_file: %w", checkRegular(fi, *args.Path))
	case err == nil:
		mode, existing = fi.Mode().Perm(), true
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("write_file: %w", err)
	}
	if err := p.fsys.MkdirAll(filepath.Dir(p.name), 0o777); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	if err := replace(p.fsys, p.name, []byte(*args.Content), mode, existing); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(*args.Content), p.abs), nil
}

// replace is the atomic write: temp file (created 0666, which the kernel
// cuts by the umask), write, sync, chmod to an existing file's mode,
// close, rename, sync of the directory.
func replace(fsys fileSys, path string, data []byte, keep fs.FileMode, existing bool) (err error) {
	dir := filepath.Dir(path)
	var tmp *os.File
	var tmpName string
	for range 10 {
		tmpName = filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		tmp, err = fsys.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			fsys.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if existing {
		if err = tmp.Chmod(keep); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = fsys.Rename(tmpName, path); err != nil {
		return err
	}
	return syncDir(fsys, dir)
}

// syncDir is fsstore.SyncDir in fsys: it commits a rename in dir.
func syncDir(fsys fileSys, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
