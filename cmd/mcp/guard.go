package mcp

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// guardScript is the guard's program: it reads "+ PGID" for each server
// process group hermes starts and "- PGID" for each it has ended, and at
// the end of its input (hermes exited, or was killed) kills the groups
// still listed. It runs no other program, so it needs nothing but sh.
const guardScript = `g=
while read -r op id; do
	case $op in
	+) g="$g $id" ;;
	-) n=; for x in $g; do [ "$x" = "$id" ] || n="$n $x"; done; g=$n ;;
	esac
done
for x in $g; do kill -s KILL -- "-$x" 2>/dev/null; done`

// guard is a small process that outlives hermes to kill the process
// groups of the servers a kill -9 of hermes leaves behind. A parent-death
// signal reaches only hermes's own children, not what they start (npx
// runs sh, which runs node), and not every server exits at the end of its
// input; only a process alive after hermes can end them. One guard serves
// the process, started with its first stdio server.
type guard struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File // the guard's input; nil if there is none
}

// procGuard is the process's guard (a variable so that a benchmark can
// start each first call with none, as a process does).
var procGuard = &guard{}

// start starts the guard, once. Its input is a pipe whose only writer is
// hermes, so the guard reads its end when hermes is gone, however it
// ended. The process starts in the background, off the first call's
// path: what is written before it runs waits in the pipe.
func (g *guard) start() {
	g.once.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		g.w = w
		go func() {
			cmd := exec.Command("/bin/sh", "-c", guardScript)
			cmd.Stdin, cmd.Dir = r, "/"
			// Its own group: a ^C at the terminal, which hermes answers
			// by closing its servers, does not end the guard first.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			err := cmd.Start()
			r.Close()
			if err == nil {
				cmd.Wait()
			}
		}()
	})
}

// watch asks the guard to kill the process group pgid if hermes dies.
func (g *guard) watch(pgid int) {
	g.start()
	g.send('+', pgid)
}

// forget tells the guard that hermes has ended the group pgid itself, so
// that the guard does not kill a group that later takes the same id.
func (g *guard) forget(pgid int) {
	g.send('-', pgid)
}

// send writes one line to the guard. A guard that could not start is no
// reason to refuse a server: its own children still get the
// parent-death signal on Linux, and the end of their input everywhere.
func (g *guard) send(op byte, pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		fmt.Fprintf(g.w, "%c %d\n", op, pgid)
	}
}
