// Command interleave times commands in rotation and prints the median wall
// time of each, in seconds, on one line, in the order given.
//
//	go run ./scripts/interleave [-runs 40] [-warmup 3] -- A ARGS... ::: B ARGS... [::: C ARGS...]
//
// Timing A's runs and then B's, as hyperfine does, lets a drift of the
// machine between the two blocks (the disk's sync latency moves by 10 to
// 20% over seconds on a shared VM) pass for a difference between A and B.
// Here each round runs every command once, round i starting with the i-th
// command (A B C, then B C A, …), so all of them see the same machine and
// none is always first. Each command runs directly, with no shell, its
// output discarded; a run that exits non-zero stops interleave with exit 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	runs := flag.Int("runs", 40, "timed runs of each command")
	warmup := flag.Int("warmup", 3, "untimed runs of each command first")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: interleave [-runs N] [-warmup N] -- A ARGS... ::: B ARGS... [::: C ARGS...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	cmds := split(flag.Args())
	if len(cmds) < 2 || *runs < 1 || *warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	times, err := rotate(cmds, *warmup, *runs, run)
	if err != nil {
		fmt.Fprintf(os.Stderr, "interleave: %v\n", err)
		os.Exit(1)
	}
	out := make([]string, len(cmds))
	for k, t := range times {
		out[k] = fmt.Sprintf("%.9f", median(t))
	}
	fmt.Println(strings.Join(out, " "))
}

// split parses "A ARGS... ::: B ARGS... ::: …"; nil if a command is empty.
func split(args []string) [][]string {
	var cmds [][]string
	for {
		i := slices.Index(args, ":::")
		if i < 0 {
			i = len(args)
		}
		if i == 0 {
			return nil
		}
		cmds = append(cmds, args[:i])
		if i == len(args) {
			return cmds
		}
		args = args[i+1:]
	}
}

// rotate runs every command warmup+runs times, round i starting with the
// i-th command, and returns the times of the last runs rounds in seconds,
// by command.
func rotate(cmds [][]string, warmup, runs int, run func([]string) (time.Duration, error)) ([][]float64, error) {
	times := make([][]float64, len(cmds))
	for i := 0; i < warmup+runs; i++ {
		for k := range cmds {
			which := (i + k) % len(cmds)
			d, err := run(cmds[which])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(cmds[which], " "), err)
			}
			if i >= warmup {
				times[which] = append(times[which], d.Seconds())
			}
		}
	}
	return times, nil
}

func run(argv []string) (time.Duration, error) {
	c := exec.Command(argv[0], argv[1:]...)
	t0 := time.Now()
	err := c.Run()
	return time.Since(t0), err
}

func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
