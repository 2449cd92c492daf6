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
	"strings"

	"github.com/hermes/hermes/fsstore"
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
	path, err := resolve(env, args.Path)
	if err != nil {
		return "", fmt.Errorf("read_file: %w", err)
	}
	f, err := openRegular(ctx, path, args.Path, 0)
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
	path, err := resolve(env, *args.Path)
	if err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	var mode fs.FileMode
	existing := false
	fi, err := os.Lstat(path)
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
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	if err := replace(path, []byte(*args.Content), mode, existing); err != nil {
		return "", fmt.Errorf("write_file: %w", err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(*args.Content), path), nil
}

// replace is the atomic write: temp file (created 0666, which the kernel
// cuts by the umask), write, sync, chmod to an existing file's mode,
// close, rename, sync of the directory.
func replace(path string, data []byte, keep fs.FileMode, existing bool) (err error) {
	dir := filepath.Dir(path)
	var tmp *os.File
	for range 10 {
		name := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		tmp, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
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
			os.Remove(tmp.Name())
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
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return fsstore.SyncDir(dir)
}

// resolve makes path absolute from the session's working directory. When
// env.Root is set, a path that leads outside it is an error: by "..", by
// an absolute name, or through a symbolic link, whether the file exists
// or a write would create it (the real path of its deepest existing
// ancestor decides).
func resolve(env *Env, name string) (string, error) {
	path := name
	if !filepath.IsAbs(path) && env.Cwd != "" {
		path = filepath.Join(env.Cwd, path)
	}
	path = filepath.Clean(path)
	if env.Root == "" {
		return path, nil
	}
	root, err := filepath.EvalSymlinks(env.Root)
	if err != nil {
		return "", err
	}
	real, err := realPath(path)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside %s, the directory file tools keep to", name, env.Root)
	}
	return path, nil
}

// realPath is path with every symbolic link on it followed, as far as it
// exists: the real path of its deepest existing ancestor, then the rest
// of its names. A link to nothing is followed to where it points.
func realPath(path string) (string, error) {
	for range 255 {
		dir, rest := path, ""
		for {
			_, err := os.Lstat(dir)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
				return "", err
			}
			rest = filepath.Join(filepath.Base(dir), rest)
			dir = filepath.Dir(dir)
		}
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// dir exists but leads nowhere: it is a link (or a chain of them)
		// to a missing name, which a write through it would create.
		target, err := os.Readlink(dir)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(dir), target)
		}
		path = filepath.Join(target, rest)
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}
