package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes/hermes/fsstore/sessions"
)

// Project instructions: the AGENTS.md files a session's first turn reads.
const (
	InstructionsFile = "AGENTS.md"
	// MaxInstructions bounds the note the files make, in bytes: a longer
	// one keeps its head and its tail (the most general file and the
	// nearest one) with a marker saying how much was cut.
	MaxInstructions = 32 << 10
	// instructionsHeader starts the note, and tells it from other notes.
	instructionsHeader = "Project instructions (AGENTS.md)"
)

// Instructions reads the project instructions of a session's first turn:
// <profile>/AGENTS.md, then the AGENTS.md of each directory from the
// repository root (the nearest directory above the working directory that
// holds a .git) down to the working directory; outside a repository, the
// working directory's alone.
type Instructions struct {
	ProfileDir string
	// Warn reports a file that is there but cannot be read; the turn goes
	// on without it.
	Warn func(string)
}

// Paths returns the AGENTS.md files that apply in cwd, in the order the
// note gives them, whether they exist or not.
func (in *Instructions) Paths(cwd string) []string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	var dirs []string
	for dir := cwd; ; {
		dirs = append(dirs, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			dirs = dirs[:1] // no repository: the working directory alone
			break
		}
		dir = parent
	}
	var paths []string
	if in.ProfileDir != "" {
		paths = append(paths, filepath.Join(in.ProfileDir, InstructionsFile))
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], InstructionsFile)
		if len(paths) == 0 || paths[0] != p {
			paths = append(paths, p)
		}
	}
	return paths
}

// Note returns the system message, marked as hermes's note, that holds
// the instructions for a session working in cwd; ok is false when no file
// has any. A file whose read ctx cancels, or which does not answer, is
// left out with a warning, as one that cannot be read.
func (in *Instructions) Note(ctx context.Context, cwd string) (m sessions.Message, ok bool) {
	var b strings.Builder
	for _, p := range in.Paths(cwd) {
		text, err := readInstructions(ctx, p)
		if err != nil {
			if in.Warn != nil {
				in.Warn(fmt.Sprintf("%s left out of the session's instructions: %v", p, err))
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&b, "\n\n--- %s ---\n%s", p, strings.TrimRight(text, "\n"))
	}
	if b.Len() == 0 {
		return sessions.Message{}, false
	}
	text := instructionsHeader + ", the most general first; where they disagree, the later (nearer the working directory) wins:" + b.String()
	return note(sessions.Message{Role: "system", Content: sessions.TextContent(cut(text, MaxInstructions))}), true
}

// IsInstructions reports whether m is the note Note makes.
func IsInstructions(m sessions.Message) bool {
	return m.Role == "system" && IsNote(m) && strings.HasPrefix(m.Text(), instructionsHeader)
}

// readInstructions reads one AGENTS.md through the one reader: "" when
// there is none; a file that is not a regular one (a FIFO, a directory)
// is an error, found without blocking, and so is one whose read does not
// answer. At most MaxInstructions bytes are read; the note is cut to that
// size anyway.
func readInstructions(ctx context.Context, path string) (string, error) {
	f, err := openRegular(ctx, hostFiles{}, path, path, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxInstructions))
	if err != nil {
		return "", err
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if rest := f.info.Size() - int64(len(b)); rest > 0 {
		text += fmt.Sprintf("\n[… %d bytes cut …]", rest)
	}
	return text, nil
}
