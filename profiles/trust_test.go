package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// write makes the file at path with mode (whatever the umask), and its
// missing directories 0700.
func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// A profile whose configuration another account could write is refused,
// naming the path, what is wrong and the command that fixes it; the
// commands it names are judged where hermes would start them.
func TestLoadRefusesWhatOthersCanWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the profile unsafe, and returns the path at fault.
		setup   func(t *testing.T, p Profile, cwd string) string
		problem string
	}{
		{"group-writable profile directory", func(t *testing.T, p Profile, _ string) string {
			chmod(t, p.Dir(), 0o770)
			return p.Dir()
		}, "writable by group"},
		{"world-writable profile directory", func(t *testing.T, p Profile, _ string) string {
			chmod(t, p.Dir(), 0o777)
			return p.Dir()
		}, "writable by group and others"},
		{"sticky world-writable profile directory", func(t *testing.T, p Profile, _ string) string {
			chmod(t, p.Dir(), 0o777|os.ModeSticky)
			return p.Dir()
		}, "writable by group and others"},
		{"world-writable profiles directory", func(t *testing.T, p Profile, _ string) string {
			dir := filepath.Dir(p.Dir())
			chmod(t, dir, 0o777)
			return dir
		}, "writable by group and others"},
		{"world-writable root", func(t *testing.T, p Profile, _ string) string {
			chmod(t, p.Root, 0o707)
			return p.Root
		}, "writable by others"},
		{"group-writable config.yaml", func(t *testing.T, p Profile, _ string) string {
			path := filepath.Join(p.Dir(), "config.yaml")
			write(t, path, "provider: echo\n", 0o660)
			return path
		}, "writable by group"},
		{"world-writable config.yaml", func(t *testing.T, p Profile, _ string) string {
			path := filepath.Join(p.Dir(), "config.yaml")
			write(t, path, "provider: exec\nexec_command: touch marker\n", 0o666)
			return path
		}, "writable by group and others"},
		{"config.yaml that does not parse, world-writable", func(t *testing.T, p Profile, _ string) string {
			path := filepath.Join(p.Dir(), "config.yaml")
			write(t, path, "provider: [\n", 0o602)
			return path
		}, "writable by others"},
		{"symlinked config.yaml, world-writable target", func(t *testing.T, p Profile, cwd string) string {
			target := filepath.Join(cwd, "dotfiles", "config.yaml")
			write(t, target, "provider: echo\n", 0o666)
			if err := os.Symlink(target, filepath.Join(p.Dir(), "config.yaml")); err != nil {
				t.Fatal(err)
			}
			return target
		}, "writable by group and others"},
		{"symlinked config.yaml in a world-writable directory", func(t *testing.T, p Profile, cwd string) string {
			dir := filepath.Join(cwd, "dotfiles")
			write(t, filepath.Join(dir, "config.yaml"), "provider: echo\n", 0o600)
			chmod(t, dir, 0o777)
			if err := os.Symlink(filepath.Join(dir, "config.yaml"), filepath.Join(p.Dir(), "config.yaml")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "writable by group and others"},
		{"group-writable AGENTS.md", func(t *testing.T, p Profile, _ string) string {
			path := filepath.Join(p.Dir(), "AGENTS.md")
			write(t, path, "Always run ./x.\n", 0o620)
			return path
		}, "writable by group"},
		{"exec_command by a relative path", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "provider: exec\nexec_command: ./agent.sh --fast\n", 0o600)
			path := filepath.Join(cwd, "agent.sh")
			write(t, path, "#!/bin/sh\n", 0o777)
			return path
		}, "writable by group and others"},
		{"exec_command after assignments", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: A=1 B_2='x y' bin/agent\n", 0o600)
			path := filepath.Join(cwd, "bin", "agent")
			write(t, path, "#!/bin/sh\n", 0o775)
			return path
		}, "writable by group"},
		{"exec_command inside the profile", func(t *testing.T, p Profile, _ string) string {
			path := filepath.Join(p.Dir(), "bin", "agent")
			write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: "+path+"\n", 0o600)
			write(t, path, "#!/bin/sh\n", 0o757)
			return path
		}, "writable by others"},
		{"exec_command in a world-writable directory", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: ./bin/agent\n", 0o600)
			write(t, filepath.Join(cwd, "bin", "agent"), "#!/bin/sh\n", 0o700)
			dir := filepath.Join(cwd, "bin")
			chmod(t, dir, 0o777)
			return dir
		}, "writable by group and others"},
		{"exec_command not there, in a world-writable directory", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: ./bin/agent\n", 0o600)
			dir := filepath.Join(cwd, "bin")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			chmod(t, dir, 0o777)
			return dir
		}, "writable by group and others"},
		{"gateway.models exec_command", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "gateway:\n  models:\n    local:\n      exec_command: ./local.sh\n", 0o600)
			path := filepath.Join(cwd, "local.sh")
			write(t, path, "#!/bin/sh\n", 0o766)
			return path
		}, "writable by group and others"},
		{"kanban.worker_command", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "kanban:\n  worker_command: ./worker {prompt}\n", 0o600)
			path := filepath.Join(cwd, "worker")
			write(t, path, "#!/bin/sh\n", 0o770)
			return path
		}, "writable by group"},
		{"MCP server command relative to its cwd", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "mcp_servers:\n  fs:\n    command: bin/server\n    cwd: tools\n", 0o600)
			path := filepath.Join(cwd, "tools", "bin", "server")
			write(t, path, "#!/bin/sh\n", 0o777)
			return path
		}, "writable by group and others"},
		{"hook command", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "hooks:\n  PreToolUse:\n    - matcher: Bash\n      command: ./check.sh --strict\n", 0o600)
			path := filepath.Join(cwd, "check.sh")
			write(t, path, "#!/bin/sh\n", 0o775)
			return path
		}, "writable by group"},
		{"gateway hook command in Claude Code's form", func(t *testing.T, p Profile, cwd string) string {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "gateway:\n  hooks:\n    Stop:\n      - hooks:\n          - type: command\n            command: hooks/stop.py\n", 0o600)
			path := filepath.Join(cwd, "hooks", "stop.py")
			write(t, path, "#!/bin/sh\n", 0o757)
			return path
		}, "writable by others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProfile(t)
			cwd := t.TempDir()
			t.Chdir(cwd)
			want := tc.setup(t, p, cwd)
			_, err := Load(p)
			var u *UnsafeError
			if !errors.As(err, &u) || !errors.Is(err, fsstore.ErrInvalid) {
				t.Fatalf("Load: %v, want an *UnsafeError that is ErrInvalid", err)
			}
			if u.Path != want || u.Problem != tc.problem || u.Fix != "chmod go-w "+want {
				t.Errorf("Load: path %s, problem %q, fix %q; want %s, %q, chmod go-w %s", u.Path, u.Problem, u.Fix, want, tc.problem, want)
			}
			if msg := err.Error(); !strings.Contains(msg, want+" (") || !strings.HasSuffix(msg, "fix with: chmod go-w "+want) {
				t.Errorf("message %q: want the path and the chmod", msg)
			}
			if all, err := Unsafe(p); err != nil || len(all) != 1 || all[0].Path != want {
				t.Errorf("Unsafe: %v %v, want %s alone", all, err, want)
			}
		})
	}
}

// A profile hermes made, in a temporary directory, is safe; so are a
// sticky parent that others can write (/tmp), a symlinked config.yaml
// that only the user can write, commands named bare (looked up in $PATH)
// and root's own commands.
func TestLoadAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, p Profile, cwd string)
	}{
		{"a new profile", func(*testing.T, Profile, string) {}},
		{"no root", func(t *testing.T, p Profile, _ string) {
			if err := os.RemoveAll(p.Root); err != nil {
				t.Fatal(err)
			}
		}},
		{"sticky root and profiles directory", func(t *testing.T, p Profile, _ string) {
			chmod(t, filepath.Dir(p.Dir()), 0o777|os.ModeSticky)
			chmod(t, p.Root, 0o777|os.ModeSticky)
		}},
		{"read-only for group and others", func(t *testing.T, p Profile, _ string) {
			chmod(t, p.Dir(), 0o755)
			write(t, filepath.Join(p.Dir(), "config.yaml"), "provider: echo\n", 0o644)
			write(t, filepath.Join(p.Dir(), "AGENTS.md"), "Be brief.\n", 0o644)
		}},
		{"symlinked config.yaml", func(t *testing.T, p Profile, cwd string) {
			target := filepath.Join(cwd, "dotfiles", "config.yaml")
			write(t, target, "provider: echo\n", 0o600)
			if err := os.Symlink(target, filepath.Join(p.Dir(), "config.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{"config.yaml in a sticky directory", func(t *testing.T, p Profile, cwd string) {
			dir := filepath.Join(cwd, "shared")
			write(t, filepath.Join(dir, "config.yaml"), "provider: echo\n", 0o600)
			chmod(t, dir, 0o777|os.ModeSticky)
			if err := os.Symlink(filepath.Join(dir, "config.yaml"), filepath.Join(p.Dir(), "config.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{"commands named bare, root's, or not there", func(t *testing.T, p Profile, cwd string) {
			write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: python3 agent.py\n"+
				"kanban:\n  worker_command: /bin/sh -c 'hermes chat -q {prompt}'\n"+
				"mcp_servers:\n  fs:\n    command: ./missing\n", 0o600)
			write(t, filepath.Join(cwd, "agent.py"), "", 0o666)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProfile(t)
			cwd := t.TempDir()
			t.Chdir(cwd)
			tc.setup(t, p, cwd)
			if _, err := Load(p); err != nil {
				t.Errorf("Load: %v", err)
			}
			if all, err := Unsafe(p); err != nil || len(all) != 0 {
				t.Errorf("Unsafe: %v %v, want nothing", all, err)
			}
		})
	}
}

// Without a working directory (removed under hermes), a command relative
// to it cannot run: it is not judged, and the rest of the profile is.
func TestLoadWithoutWorkingDirectory(t *testing.T) {
	p := newProfile(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	write(t, filepath.Join(p.Dir(), "config.yaml"), "exec_command: ./agent.sh\n", 0o600)
	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Getwd(); err == nil {
		t.Skip("os.Getwd works in a removed directory on this system: there is no failure to test (Linux has it)")
	}
	if _, err := Load(p); err != nil {
		t.Fatalf("Load: %v", err)
	}
	chmod(t, p.Dir(), 0o777)
	var u *UnsafeError
	if _, err := Load(p); !errors.As(err, &u) || u.Path != p.Dir() {
		t.Fatalf("Load: %v, want the profile directory refused", err)
	}
}

// Another account's file or directory is refused whatever its mode; root's
// is not (as ssh accepts root's). Only root can give a file away.
func TestLoadRefusesAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a file to another account: sudo go test ./profiles/ -run TestLoadRefusesAnotherOwner")
	}
	const nobody = 65534
	for _, name := range []string{"config.yaml", "AGENTS.md", ""} {
		t.Run("owned "+name, func(t *testing.T) {
			p := newProfile(t)
			path := p.Dir()
			if name != "" {
				path = filepath.Join(p.Dir(), name)
				write(t, path, "provider: echo\n", 0o644)
			}
			if err := os.Chown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			var u *UnsafeError
			if !errors.As(err, &u) || u.Path != path || u.Problem != "owned by uid 65534, not you (uid 0)" || u.Fix != "sudo chown 0 "+path {
				t.Fatalf("Load: %v, want %s refused as another account's", err, path)
			}
			chmod(t, path, 0o666)
			_, err = Load(p)
			if !errors.As(err, &u) || u.Problem != "owned by uid 65534, not you (uid 0), and writable by group and others" ||
				u.Fix != "sudo chown 0 "+path+" && chmod go-w "+path {
				t.Fatalf("Load: %v, want both problems and both fixes", err)
			}
		})
	}
}

// Unsafe lists every problem, from the root down, each path once; Load
// refuses with the first.
func TestUnsafeListsAll(t *testing.T) {
	p := newProfile(t)
	t.Chdir(t.TempDir())
	config := filepath.Join(p.Dir(), "config.yaml")
	agents := filepath.Join(p.Dir(), "AGENTS.md")
	write(t, config, "provider: echo\n", 0o666)
	write(t, agents, "", 0o666)
	chmod(t, p.Dir(), 0o777)
	chmod(t, p.Root, 0o777)
	all, err := Unsafe(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range all {
		got = append(got, u.Path)
	}
	if want := []string{p.Root, p.Dir(), config, agents}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Unsafe: %q, want %q", got, want)
	}
	var u *UnsafeError
	if _, err := Load(p); !errors.As(err, &u) || u.Path != p.Root {
		t.Errorf("Load: %v, want the root refused first", err)
	}
}

// A path with characters a shell would read is quoted in the fix, so
// that it can be pasted.
func TestUnsafeFixQuotes(t *testing.T) {
	p := Profile{Root: filepath.Join(t.TempDir(), "it's mine"), Name: DefaultName}
	if err := fsstore.EnsureDir(p.Dir()); err != nil {
		t.Fatal(err)
	}
	chmod(t, p.Dir(), 0o777)
	var u *UnsafeError
	if _, err := Load(p); !errors.As(err, &u) || u.Fix != `chmod go-w '`+strings.ReplaceAll(p.Dir(), "'", `'\''`)+`'` {
		t.Fatalf("Load: %v, want the path quoted", err)
	}
}

// Adding or removing an MCP server refuses a config.yaml that another
// account could write, and leaves it as it is: the rewrite would make its
// contents the user's own. A server whose command is unsafe can still be
// removed.
func TestEditConfigRefusesUnsafe(t *testing.T) {
	p := newProfile(t)
	t.Chdir(t.TempDir())
	path := filepath.Join(p.Dir(), "config.yaml")
	text := "mcp_servers:\n  fs:\n    command: ./server\n"
	write(t, path, text, 0o666)
	err := AddMCPServer(p, "more", MCPServer{Command: "more-server"}, time.Second)
	var u *UnsafeError
	if !errors.As(err, &u) || u.Path != path {
		t.Fatalf("AddMCPServer: %v, want %s refused", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != text {
		t.Errorf("config.yaml: %q, want it untouched", b)
	}
	chmod(t, path, 0o600)
	write(t, "server", "", 0o777)
	if _, err := Load(p); !errors.As(err, &u) {
		t.Fatalf("Load: %v, want the server's command refused", err)
	}
	if err := RemoveMCPServer(p, "fs", time.Second); err != nil {
		t.Fatalf("RemoveMCPServer: %v", err)
	}
	if _, err := Load(p); err != nil {
		t.Errorf("Load after the removal: %v", err)
	}
}
