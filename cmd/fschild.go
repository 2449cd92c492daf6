package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// A command whose profile is on a network or FUSE filesystem runs in a
// child of hermes, the watched child, and the process the caller started
// only waits for it. A thread inside a request that a FUSE client (or a
// hard NFS mount) has taken cannot be interrupted, and a process with
// such a thread cannot finish exiting: a command whose watchdog (watchFS)
// gave up would still keep its shell, its cron or its $(…) waiting until
// the mount answered again. The child's watchdog tells the parent instead,
// through a pipe, and the parent says so and exits 1 at once; the child
// dies when its request returns (on Linux and FreeBSD the parent's exit
// sends it SIGKILL). On a local disk nothing of this happens: the mount
// table says so, read without asking any filesystem (netFSPath), and the
// command runs in the one process.

// fsChildEnv marks the watched child. Its value is "FD TIMEOUT DIR": the
// descriptor of the pipe to the parent, --fs-timeout, and the directory
// whose filesystem the child watches. The child removes it from its
// environment, so that a hermes it starts decides for itself.
const fsChildEnv = "HERMES_FS_CHILD"

// fsStallEnv is test-only: in a watched child, the filesystem "stops
// answering" (the probe and the command block, the process cannot exit)
// until the file it names exists, as a FUSE mount cut off from its server
// does.
const fsStallEnv = "HERMES_TEST_FS_STALL"

// fsWatchedKey, in an App's Metadata, says that the whole command is
// watched (the watched child): withEnv adds no watchdog of its own.
const fsWatchedKey = "fs-watched"

// Main runs hermes with os.Args and returns the exit code: in a watched
// child when the profile's filesystem is a network one (superviseNetFS),
// else in this process.
func Main() int {
	app := NewApp(os.Stdin, os.Stdout, os.Stderr)
	if spec, ok := os.LookupEnv(fsChildEnv); ok {
		os.Unsetenv(fsChildEnv)
		return runFSChild(app, os.Args, spec)
	}
	app.Before = superviseNetFS(os.Args)
	return finish(app, runApp(app, os.Args))
}

// superviseNetFS is the Before of a command started by its caller: once
// the global flags are read, and when --fs-timeout is not 0 and the
// profile is on a network or FUSE filesystem, it runs the command in a
// watched child and returns how it ended, which ends the command here.
// The profile's path is its directory when --profile or $HERMES_PROFILE
// names it, else the root (active_profile, which would name it, is on
// the filesystem in question). Anything that keeps it from telling, or
// from starting the child, leaves the command to run in this process.
func superviseNetFS(args []string) cli.BeforeFunc {
	return func(c *cli.Context) error {
		timeout, err := profiles.ParseDuration(c.String("fs-timeout"))
		if err != nil || timeout <= 0 {
			return nil
		}
		root, err := profiles.Root(c.String("home"))
		if err != nil {
			return nil
		}
		p := root
		name := c.String("profile")
		if name == "" {
			name = os.Getenv("HERMES_PROFILE")
		}
		if name != "" && profiles.CheckName(name) == nil {
			p = profiles.Dir(root, name)
		}
		dir, ok := netFSPath(p)
		if !ok {
			return nil
		}
		return runWatched(args, timeout, dir)
	}
}

// runWatched runs hermes with args in a watched child that watches dir
// with timeout, and returns how it ended: the child's report that the
// filesystem stopped answering (exit 1, at once), else its exit code
// (silentExit; 128 + N for a signal N, as a shell says it). It returns nil
// when the child cannot be started, for the command to run here.
//
// The child inherits stdin, stdout, stderr and every descriptor this
// process inherited (a caller's ready pipe, a script's 3>file), at the
// same numbers; the pipe to the parent comes after them. SIGTERM and
// SIGHUP are passed on, and SIGINT and SIGQUIT unless this process is in
// its terminal's foreground process group, where the terminal sent them
// to the child as well (a chat's second Ctrl-C must not be its first).
func runWatched(args []string, timeout time.Duration, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	extra := inheritedFiles()
	fd := 3 + len(extra)
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        args,
		Env:         append(os.Environ(), fmt.Sprintf("%s=%d %s %s", fsChildEnv, fd, timeout, dir)),
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  append(extra, w),
		SysProcAttr: fsChildAttr(),
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	// The parent-death signal is sent when the thread that started the
	// child ends, not the process (Go issue 27505): this goroutine keeps
	// its thread, and waits on it until the process exits.
	runtime.LockOSThread()
	err = cmd.Start()
	// The child has them now: a caller that waits for the end of a pipe
	// it gave (a ready pipe's writer gone) must not wait for this process.
	for _, f := range cmd.ExtraFiles {
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		runtime.UnlockOSThread()
		return nil
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	reported := make(chan string, 1)
	closed := make(chan struct{})
	go func() {
		br := bufio.NewReader(r)
		line, _ := br.ReadString('\n')
		reported <- strings.TrimSuffix(line, "\n")
		io.Copy(io.Discard, br)
		close(closed)
	}()
	for {
		select {
		case msg := <-reported:
			if msg != "" {
				// The child closes the pipe once it has let go of its
				// streams, which this exit's signal would keep it from
				// doing; a stream that is a file on the filesystem in
				// question may keep it waiting, not this process.
				select {
				case <-closed:
				case <-time.After(time.Second):
				}
				return errors.New(msg)
			}
			reported = nil // the child ended, or is ending, without a report
		case <-exited:
			if reported != nil {
				if msg := <-reported; msg != "" {
					return errors.New(msg)
				}
			}
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return silentExit{128 + int(ws.Signal())}
			}
			return silentExit{cmd.ProcessState.ExitCode()}
		case sig := <-sigs:
			if !fromTerminal(sig) {
				cmd.Process.Signal(sig)
			}
		}
	}
}

// inheritedFiles returns the descriptors from 3 on that this process was
// given by its caller (open and not close-on-exec: the ones hermes opens
// are), each at its index + 3, nil for a gap, up to the last one given.
func inheritedFiles() []*os.File {
	var files []*os.File
	last := -1
	for fd := 3; fd < 64; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			files = append(files, nil)
			continue
		}
		files = append(files, os.NewFile(uintptr(fd), "fd"+strconv.Itoa(fd)))
		last = fd - 3
	}
	return files[:last+1]
}

// fromTerminal reports whether sig is one a terminal sends to its
// foreground process group (SIGINT, SIGQUIT) while this process is in
// that group, and so the watched child, which shares it, has it too.
func fromTerminal(sig os.Signal) bool {
	if sig != syscall.SIGINT && sig != syscall.SIGQUIT {
		return false
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// runFSChild runs the command as the watched child: the whole of it under
// watchFS. When the filesystem stops answering, the child tells its parent
// (the message, one line, on the pipe), lets go of stdin, stdout, stderr
// and the other descriptors it was given (/dev/null in their place: a
// shell's 2> >(…) is one), then closes the pipe: a shell reading its
// output waits for every holder of the pipe to close it, and this process
// cannot close them by exiting while a thread of it waits in the
// filesystem; the parent waits for the pipe's end (at most a second)
// before it exits, since its exit's SIGKILL would stop the child before. A spec that
// does not parse runs the command unwatched, as a local disk's would.
func runFSChild(app *cli.App, args []string, spec string) int {
	f := strings.SplitN(spec, " ", 3)
	if len(f) != 3 {
		return finish(app, runApp(app, args))
	}
	fd, err1 := strconv.Atoi(f[0])
	timeout, err2 := time.ParseDuration(f[1])
	if err1 != nil || err2 != nil || fd < 3 {
		return finish(app, runApp(app, args))
	}
	syscall.CloseOnExec(fd)
	parent := os.NewFile(uintptr(fd), "parent")
	dir := f[2]
	stall := stallUntil(os.Getenv(fsStallEnv))
	if stall != nil {
		fsProbe = func(dir string) error { stall(); return fsstore.ProbeDir(dir) }
	}
	app.Metadata = map[string]any{fsWatchedKey: true}
	err := watchFS(dir, timeout, func() error {
		if stall != nil {
			stall()
		}
		return runApp(app, args)
	})
	var stuck *fsTimeoutError
	if !errors.As(err, &stuck) {
		parent.Close()
		return finish(app, err)
	}
	fmt.Fprintln(parent, errorText(err))
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for given := 0; given < fd; given++ {
			if flags, err := unix.FcntlInt(uintptr(given), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
				unix.Dup2(int(null.Fd()), given)
			}
		}
		null.Close()
	}
	parent.Close()
	if stall != nil {
		stall() // the exit of a process with a thread in the filesystem
	}
	return ExitFailed
}

// stallUntil returns, for a non-empty path, a call that blocks until the
// file exists ($HERMES_TEST_FS_STALL), and nil for "".
func stallUntil(path string) func() {
	if path == "" {
		return nil
	}
	return func() {
		for {
			if _, err := os.Stat(path); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
